/**
 * A retry budget per upstream: over a 10 s window, retries may add at most budgetPercent of the
 * requests (and at least 3), so a failing upstream is never hit with a multiple of its load.
 */
const WINDOW_MS = 10_000;
const MIN_RETRIES = 3;

export class RetryBudget {
  readonly #percent: number;
  readonly #now: () => number;
  #start = 0;
  #requests = 0;
  #retries = 0;

  constructor(percent: number, now: () => number = Date.now) {
    this.#percent = percent;
    this.#now = now;
  }

  #roll(): void {
    const now = this.#now();
    if (now - this.#start >= WINDOW_MS) {
      this.#start = now;
      this.#requests = 0;
      this.#retries = 0;
    }
  }

  request(): void {
    this.#roll();
    this.#requests++;
  }

  /** Takes one retry from the budget, or says there is none left. */
  take(): boolean {
    this.#roll();
    if (this.#retries >= Math.max(MIN_RETRIES, Math.floor((this.#requests * this.#percent) / 100)))
      return false;
    this.#retries++;
    return true;
  }
}
