/**
 * A request waiting for its decision from the shared counters: the store's waiter (it is told
 * the decision, or the store's failure) and what the request hook returns to the chain runner
 * (which resumes the request through `then`), in one object.
 *
 * Optimization: a hit through promises cost three promises, five closures and two microtask
 * turns per request (the store's promise, the plugin's `.then`, the chain runner's `.then`);
 * here it is this object, and the request goes on in the same microtask as its batch's answer
 * from Redis. The chain runner calls `then` as soon as the hook returns, before any answer can
 * come (the store sends a turn's hits at the end of the turn), but an answer that came first
 * would wait here for it. Nothing thrown reaches the store's loop over a batch's waiters: an
 * outcome that throws fails this request's chain (a 500), and the chain runner catches its own.
 */
import type { RequestContext, Resumable } from '../../pipeline/context.ts';
import type { Decision, HitWaiter } from '../../stores/rate-limit-store.ts';

/** What the plugin does with a decision, or with the store's failure (fail open or closed). */
export interface HitOutcomes {
  answered(ctx: RequestContext, d: Decision): void;
  unavailable(ctx: RequestContext, err: unknown, bucket: string): void;
}

export class WaitingHit implements HitWaiter, Resumable {
  readonly #ctx: RequestContext;
  readonly #bucket: string;
  readonly #outcomes: HitOutcomes;
  #resume: (() => void) | null = null;
  #fail: ((err: unknown) => void) | null = null;
  /** An answer told before `then` (not expected: see above), replayed by `then`. */
  #early: (() => void) | null = null;

  constructor(ctx: RequestContext, bucket: string, outcomes: HitOutcomes) {
    this.#ctx = ctx;
    this.#bucket = bucket;
    this.#outcomes = outcomes;
  }

  // biome-ignore lint/suspicious/noThenProperty: a thenable on purpose: the chain runner's Resumable.
  then(resume: () => void, fail: (err: unknown) => void): void {
    this.#resume = resume;
    this.#fail = fail;
    const early = this.#early;
    this.#early = null;
    if (early !== null) early();
  }

  decided(d: Decision): void {
    if (this.#resume === null) {
      this.#early = () => this.decided(d);
      return;
    }
    try {
      this.#outcomes.answered(this.#ctx, d);
    } catch (err) {
      this.#fail!(err);
      return;
    }
    this.#resume();
  }

  failed(err: unknown): void {
    if (this.#resume === null) {
      this.#early = () => this.failed(err);
      return;
    }
    try {
      this.#outcomes.unavailable(this.#ctx, err, this.#bucket);
    } catch (e) {
      this.#fail!(e);
      return;
    }
    this.#resume();
  }
}
