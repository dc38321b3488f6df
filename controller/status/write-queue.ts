/**
 * The leader's writes to the API server (status, Gateway Services), each keyed by the object it
 * writes: only while active, a few under way at once, one at a time per object, coalesced (a
 * newer wish replaces one not yet started), and retried with backoff per object when one fails.
 * An attempt reads what to write when it starts, from the caches: a queued wish costs nothing
 * if the object turns out to need no write by then.
 */

/**
 * One try at an object's write: null when nothing needs writing (no place taken), else the
 * write, resolving 'retry' when it failed in a way worth trying again (a rejection counts too).
 */
export type Attempt = () => Promise<'done' | 'retry'> | null;

/**
 * Writes under way at once. A cold start or a failover can want thousands of writes at once;
 * one request each at the same moment is a burst the API server answers with 429s (and the
 * controller pays in sockets and buffers): client-go's controllers use a few workers too.
 */
export const MAX_IN_FLIGHT = 8;

export class WriteQueue {
  readonly #max: number;
  readonly #wanted = new Map<string, Attempt>();
  readonly #writing = new Set<string>();
  /** Keys with a write to make, waiting for a place (insertion order). */
  readonly #queued = new Set<string>();
  /** Failed writes in a row per object, for the backoff. */
  readonly #failures = new Map<string, number>();
  #active = false;

  constructor(max = MAX_IN_FLIGHT) {
    this.#max = max;
  }

  setActive(active: boolean): void {
    this.#active = active;
    // Taking over starts afresh: a write that failed before (its retry timer ended with the
    // lead) is tried now too.
    if (active) for (const key of this.#wanted.keys()) this.#flush(key, true);
  }

  /** What to write for `key` now; replaces a wish not yet started. */
  want(key: string, attempt: Attempt): void {
    this.#wanted.set(key, attempt);
    if (this.#active) this.#flush(key);
  }

  /** Whether a write for `key` is wanted, under way or backing off. */
  busy(key: string): boolean {
    return this.#wanted.has(key) || this.#writing.has(key) || this.#failures.has(key);
  }

  /** Starts queued writes while there is room (a queued key may turn out to need none). */
  #pump(): void {
    for (const key of this.#queued) {
      if (this.#writing.size >= this.#max || !this.#active) return;
      this.#queued.delete(key);
      this.#flush(key, this.#failures.has(key));
    }
  }

  #flush(key: string, retry = false): void {
    // While an object's write is backing off, a newer wish waits for the retry, which takes it.
    if (!this.#active || this.#writing.has(key) || (this.#failures.has(key) && !retry)) return;
    if (this.#writing.size >= this.#max) {
      this.#queued.add(key);
      return;
    }
    const attempt = this.#wanted.get(key);
    this.#wanted.delete(key);
    const running = attempt?.() ?? null;
    if (running === null) {
      this.#failures.delete(key);
      return;
    }
    this.#writing.add(key);
    running
      .catch(() => 'retry' as const)
      .then((outcome) => {
        this.#writing.delete(key);
        // A failed write is tried again (the newest wish, if one came meanwhile).
        if (outcome === 'retry' && !this.#wanted.has(key)) this.#wanted.set(key, attempt!);
        const tries = outcome === 'retry' ? (this.#failures.get(key) ?? 0) + 1 : 0;
        if (tries === 0) this.#failures.delete(key);
        else this.#failures.set(key, tries);
        this.#pump();
        // Retried with backoff per object (200 ms doubling to 30 s): an API server answering
        // 429 or 500 is not hammered with a write per object every 200 ms.
        if (this.#wanted.has(key) && this.#active)
          setTimeout(
            () => this.#flush(key, true),
            tries === 0 ? 0 : Math.min(200 * 2 ** (tries - 1), 30_000),
          ).unref();
      });
  }
}
