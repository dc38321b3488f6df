/**
 * A retry budget per upstream, Linkerd's (its proxy's tower budget: retryRatio 0.2,
 * minRetriesPerSecond 10, ttl 10 s): over the last 10 s, retries may number at most
 * minPerSecond × 10 + budgetPercent % of the requests. The rate is a reserve that is always
 * there, so a route's `attempts` hold at low traffic too; the share is what grows with the
 * traffic, so at real traffic retries add about budgetPercent % and a failing upstream is never
 * hit with a multiple of its load. The trade-off: below minPerSecond × 100 ÷ (100 − budgetPercent)
 * requests a second (12.5 with the defaults), retries may double a failing upstream's load or
 * more; the reserve adds at most minPerSecond of them a second, averaged over the window.
 *
 * Envoy's retry_budget (budget_percent of the requests in flight, at least min_retry_concurrency)
 * is the other model. It limits retries outstanding at once, which needs a count of requests in
 * flight per upstream that this code does not keep (call.ts counts each call once, as it
 * starts), and it bounds no rate: quick failures at low traffic all get every attempt. Linkerd's
 * counts what this code counts (requests and retries over a window) and bounds the rate, which is
 * the promise made to a failing upstream.
 *
 * The window slides in 1 s slots, as Linkerd's does: requests and retries older than 10 s stop
 * counting one slot at a time, so no run of ten seconds sees much more than the budget (a fixed
 * window allows twice it across its boundary).
 */
const WINDOW_S = 10;
const SLOT_MS = 1_000;

export class RetryBudget {
  readonly #percent: number;
  /** Retries always allowed in the window: the per-second minimum times the window's seconds. */
  readonly #reserve: number;
  readonly #now: () => number;
  /** Per slot (the slot's number modulo WINDOW_S): requests and retries counted in it. */
  readonly #requests = new Array<number>(WINDOW_S).fill(0);
  readonly #retries = new Array<number>(WINDOW_S).fill(0);
  /** The number of the current slot (the clock's time in whole slots). */
  #slot: number;
  #requestSum = 0;
  #retrySum = 0;

  constructor(percent: number, minPerSecond: number, now: () => number = Date.now) {
    this.#percent = percent;
    this.#reserve = minPerSecond * WINDOW_S;
    this.#now = now;
    this.#slot = Math.floor(now() / SLOT_MS);
  }

  /** Forgets the slots that fell out of the window (a clock that went back keeps the current one). */
  #roll(): void {
    const slot = Math.floor(this.#now() / SLOT_MS);
    if (slot <= this.#slot) return;
    for (let s = Math.max(this.#slot + 1, slot - WINDOW_S + 1); s <= slot; s++) {
      const i = s % WINDOW_S;
      this.#requestSum -= this.#requests[i];
      this.#retrySum -= this.#retries[i];
      this.#requests[i] = 0;
      this.#retries[i] = 0;
    }
    this.#slot = slot;
  }

  /** Counts one request (a call, not its tries). */
  request(): void {
    this.#roll();
    this.#requests[this.#slot % WINDOW_S]++;
    this.#requestSum++;
  }

  /** Takes one retry from the budget, or says there is none left. */
  take(): boolean {
    this.#roll();
    if (this.#retrySum >= this.#reserve + Math.floor((this.#requestSum * this.#percent) / 100)) return false;
    this.#retries[this.#slot % WINDOW_S]++;
    this.#retrySum++;
    return true;
  }
}
