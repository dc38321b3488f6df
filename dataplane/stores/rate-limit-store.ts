/**
 * Rate-limit counters: fixed windows aligned to the clock (a minute window resets at :00).
 * One decision checks every window of a bucket and counts the request in all of them only if
 * none is full, so a limit of L admits exactly L per window, however many replicas ask.
 */
export interface Window {
  seconds: number;
  limit: number;
}

/** A bucket has at most this many windows (second, minute, hour, day): the Redis stores' scripts are made per count. */
export const MAX_WINDOWS = 4;

export interface Decision {
  allowed: boolean;
  /** Per window, in the order given: requests counted so far (this one included when allowed), and seconds to its reset. */
  counts: number[];
  resets: number[];
}

/**
 * Who waits for a shared store's decision: told once, by a call, not a promise (see
 * RateLimitStore.hit). Never throws: the store tells a batch's waiters one after another.
 */
export interface HitWaiter {
  decided(d: Decision): void;
  failed(err: unknown): void;
}

export interface RateLimitStore {
  /**
   * This process's counters decide at once and return the decision; shared ones return
   * undefined and tell `waiter` later, once. Optimization: a waiter rather than a promise per hit:
   * the rate-limiting plugin's waiting request is itself the waiter and the chain runner's
   * continuation (plugins/rate-limiting/waiting-hit.ts), so a hit on Redis allocates no promise
   * and resumes its request in the same microtask as the batch's answer.
   */
  hit(bucket: string, windows: readonly Window[], waiter: HitWaiter): Decision | undefined;
}

/**
 * The default bound of a process's counters (~200 bytes each: ~50 MiB). Without one, a client
 * that names its own bucket (limitBy header, or an IPv6 /64's addresses) makes a counter per
 * request, each kept until its window ends: a day's window at 10,000 requests a second is
 * gigabytes, and the process runs out of memory.
 */
export const DEFAULT_MAX_COUNTERS = 250_000;

export interface MemoryRateLimitOptions {
  /** The most counters kept (DEFAULT_MAX_COUNTERS). */
  maxCounters?: number;
  /** Live counters dropped to stay within maxCounters, how many (each time some are). */
  onEvict?: (count: number) => void;
}

/**
 * Counters in this process (policy local, and the fail-open fallback). Bounded: the Map keeps
 * its counters in the order they were last hit, and when a new one does not fit, the least
 * recently hit goes (as nginx's limit_req zones do). A bucket in use stays, so a flood of new
 * buckets cannot reset the count of a client that keeps asking; a dropped one starts again at 0
 * (onEvict counts them).
 */
export class MemoryRateLimitStore implements RateLimitStore {
  readonly #counters = new Map<string, { count: number; resetAt: number }>();
  readonly #now: () => number;
  readonly maxCounters: number;
  readonly #onEvict: (count: number) => void;
  #sweepAt = 0;

  constructor(now: () => number = Date.now, opts: MemoryRateLimitOptions = {}) {
    this.#now = now;
    this.maxCounters = opts.maxCounters ?? DEFAULT_MAX_COUNTERS;
    this.#onEvict = opts.onEvict ?? (() => {});
  }

  hit(bucket: string, windows: readonly Window[], _waiter?: HitWaiter): Decision {
    const now = this.#now();
    if (now >= this.#sweepAt) this.#sweep(now);
    const slots = windows.map((w) => {
      const key = `${bucket}\n${w.seconds}`;
      let c = this.#counters.get(key);
      if (c === undefined || c.resetAt <= now) {
        const ms = w.seconds * 1000;
        c = { count: 0, resetAt: now - (now % ms) + ms };
      }
      // Last hit last: delete first, or set keeps the key where it was.
      this.#counters.delete(key);
      this.#counters.set(key, c);
      return c;
    });
    if (this.#counters.size > this.maxCounters) this.#fit(now);
    const allowed = slots.every((c, i) => c.count + 1 <= windows[i].limit);
    if (allowed) for (const c of slots) c.count++;
    return {
      allowed,
      counts: slots.map((c) => c.count),
      resets: slots.map((c) => Math.ceil((c.resetAt - now) / 1000)),
    };
  }

  /** Drops the least recently hit counters until the rest fit; counts the live ones. */
  #fit(now: number): void {
    let evicted = 0;
    for (const [key, c] of this.#counters) {
      if (this.#counters.size <= this.maxCounters) break;
      this.#counters.delete(key);
      if (c.resetAt > now) evicted++;
    }
    if (evicted > 0) this.#onEvict(evicted);
  }

  /** Drops expired windows, at most once a second. */
  #sweep(now: number): void {
    this.#sweepAt = now + 1000;
    for (const [key, c] of this.#counters) if (c.resetAt <= now) this.#counters.delete(key);
  }

  get size(): number {
    return this.#counters.size;
  }
}
