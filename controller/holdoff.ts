/**
 * Coalesces bursts of changes: fires `holdoffMs` after the last change, and at most
 * `maxHoldoffMs` after the first change not yet handled. Before start(), changes are only
 * noted (the first firing is start() itself). The clock is injected: tests never sleep.
 */

export interface Clock {
  now(): number;
  /** Calls fn after ms; the returned function cancels it. */
  after(ms: number, fn: () => void): () => void;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  after: (ms, fn) => {
    const t = setTimeout(fn, ms);
    return () => clearTimeout(t);
  },
};

export interface HoldoffOptions {
  holdoffMs?: number;
  maxHoldoffMs?: number;
  clock?: Clock;
}

export class Holdoff {
  readonly #fire: (since: number) => void;
  readonly #holdoffMs: number;
  readonly #maxHoldoffMs: number;
  readonly #clock: Clock;
  /** When the oldest change not yet handled happened. */
  #first: number | null = null;
  #cancel: (() => void) | null = null;
  #started = false;

  /** `fire(since)` gets the time of the oldest change it handles (now when there was none). */
  constructor(fire: (since: number) => void, o: HoldoffOptions = {}) {
    this.#fire = fire;
    this.#holdoffMs = o.holdoffMs ?? 100;
    this.#maxHoldoffMs = o.maxHoldoffMs ?? 1_000;
    this.#clock = o.clock ?? systemClock;
  }

  changed(): void {
    const now = this.#clock.now();
    this.#first ??= now;
    if (!this.#started) return;
    this.#cancel?.();
    const latest = this.#first + this.#maxHoldoffMs;
    this.#cancel = this.#clock.after(Math.max(0, Math.min(this.#holdoffMs, latest - now)), () =>
      this.flush(),
    );
  }

  /** Fires now; from then on changes schedule firings. */
  start(): void {
    this.#started = true;
    this.flush();
  }

  /** Fires now, with whatever is pending. */
  flush(): void {
    this.#cancel?.();
    this.#cancel = null;
    const since = this.#first ?? this.#clock.now();
    this.#first = null;
    this.#fire(since);
  }

  stop(): void {
    this.#started = false;
    this.#cancel?.();
    this.#cancel = null;
  }

  /** Whether a firing is scheduled. */
  get pending(): boolean {
    return this.#cancel !== null;
  }
}
