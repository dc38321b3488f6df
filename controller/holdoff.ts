/**
 * Coalesces bursts of changes: fires `holdoffMs` after the last change, and at most
 * `maxHoldoffMs` after the first change not yet handled. A change after a quiet spell (no change
 * and no firing for `holdoffMs`) is most likely a lone edit: it fires at once (on a zero timer,
 * so the changes of the same turn of the event loop join it) instead of waiting out a holdoff no
 * burst needs; the changes that follow it within `holdoffMs` are a burst and coalesce as above.
 * (At 5,000 routes a lone edit was Programmed in ~1 s, a tenth of it this wait.) A firing's end
 * counts as activity: the changes that queued up while a long build ran arrive together right
 * after it, and would otherwise look like a quiet spell's first and start builds back to back.
 * Before start(), changes are only noted (the first firing is start() itself). The clock is
 * injected: tests never sleep.
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
  /** When the last change happened, or the last firing ended if later. */
  #last = Number.NEGATIVE_INFINITY;
  #cancel: (() => void) | null = null;
  /** The scheduled firing is a quiet spell's first change's, due at once. */
  #leading = false;
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
    const quiet = now - this.#last >= this.#holdoffMs;
    this.#last = now;
    this.#first ??= now;
    if (!this.#started) return;
    if (this.#leading && this.#cancel !== null) return; // joins the firing due at once
    this.#cancel?.();
    this.#leading = quiet;
    const latest = this.#first + this.#maxHoldoffMs;
    const delay = quiet ? 0 : Math.max(0, Math.min(this.#holdoffMs, latest - now));
    this.#cancel = this.#clock.after(delay, () => this.flush());
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
    this.#leading = false;
    const since = this.#first ?? this.#clock.now();
    this.#first = null;
    this.#fire(since);
    this.#last = Math.max(this.#last, this.#clock.now());
  }

  stop(): void {
    this.#started = false;
    this.#cancel?.();
    this.#cancel = null;
    this.#leading = false;
  }

  /** Whether a firing is scheduled. */
  get pending(): boolean {
    return this.#cancel !== null;
  }
}
