/**
 * Rate-limit counters shared through Redis but decided in this process (rate-limiting's
 * `syncMs`): a hit is decided at once on what Redis last said the fleet had counted plus this
 * process's hits since, and every `syncMs` this process adds its new hits to Redis and learns the
 * fleet's total in one script call per bucket. No request waits for Redis; the price is
 * exactness: between two syncs each replica decides without the others' latest hits (as Kong's
 * `sync_rate` and APISIX's `sync_interval` do). RedisRateLimitStore is the exact one.
 *
 * Fair share: between two syncs a replica admits at most its share of the room the fleet had left
 * at its last sync, ⌈room ÷ replicas⌉ (the replicas hint). Without it a burst shorter than one
 * interval got the whole limit from every replica (3 replicas, limit 100, 1,000 concurrent
 * requests: 300 admitted); with it, 102–135 (test/e2e/rate-limiting-replicas.test.ts): what is
 * left over is the lag of one sync (a replica that synced before the others learns their hits at
 * its next sync). A burst on fewer replicas than the hint gets a share per interval, and 429 with
 * Retry-After: 1 beyond it until the next sync gives it more room. (A spent share does not bring
 * the sync forward: tried, the burst above admitted 135 in every trial, as each early sync read a
 * count the other replicas had not added to yet, and learned of room that was not there.)
 *
 * Windows are fixed and timed by this process's clock: a window's counter in Redis is named by its
 * number since the epoch (`…:<seconds>:<number>`), so replicas whose clocks agree add to one key,
 * and a sync never adds a window's hits to the next one's. Nothing runs while nothing is hit: a
 * bucket is sent only when it has new hits, by a timer armed by the first of them.
 *
 * When a sync fails, the bucket's hits it did not send are kept for the next sync (while their
 * window lasts), and its hits throw the sync's error until a sync succeeds (the plugin then fails
 * open or closed, as for the exact store): those hits are not counted here, and each asks for a
 * sync, at most one per interval, which probes Redis again.
 */
import type { StoreUnavailableError } from './idempotency-store.ts';
import { type Decision, MAX_WINDOWS, type Window } from './rate-limit-store.ts';
import type { RedisCaller, RedisClient } from './redis-connection.ts';
import { RedisScript } from './redis-script.ts';

// KEYS: one counter per window. ARGV: the hits to add to each, then each key's time to live in
// ms. Returns each counter's total after the addition.
const ADD = `
local n = #KEYS
local out = {}
for i = 1, n do
  local add = tonumber(ARGV[i])
  local total = redis.call('INCRBY', KEYS[i], add)
  if total == add then redis.call('PEXPIRE', KEYS[i], ARGV[n + i]) end
  out[i] = total
end
return out
`;

const ADDS = Array.from({ length: MAX_WINDOWS + 1 }, (_, n) => new RedisScript(ADD, n));

/** A counter outlives its window by this much in Redis: room for the replicas' clocks to differ. */
const GRACE_MS = 60_000;

/**
 * Past this many buckets (callers × plugins with a window still running, ~300 B each), the ones
 * not hit since the last sweep are forgotten too: memory stays bounded by the callers of about a
 * second when many come once (a day window by IP, a flood of addresses). A forgotten caller that
 * comes back is decided on its own hits until its next sync.
 */
const MAX_BUCKETS = 100_000;
const IDLE_MS = 1_000;

/** Decides on the counters of this process: what every shared-counter store can do synchronously. */
export interface SyncedCounters {
  /**
   * `replicas`: how many replicas share the room between syncs (the replicas hint). Throws while
   * this bucket's counts cannot reach Redis (the last sync failed).
   */
  hit(bucket: string, windows: readonly Window[], syncMs: number, replicas: number): Decision;
}

/** One window of one bucket, as this process knows it. */
interface Slot {
  /** Which window: its start ÷ its length. */
  number: number;
  /** The fleet's count as Redis last said (this process's sent hits included). */
  shared: number;
  /** Hits admitted here and not sent yet. */
  unsent: number;
  /** Hits sent and not answered yet. */
  sending: number;
}

interface Bucket {
  name: string;
  windows: readonly Window[];
  slots: Slot[];
  syncMs: number;
  lastHit: number;
  /** Waiting for the next sync, or being synced. */
  queued: boolean;
  syncing: boolean;
  /** The last sync's error, until one succeeds. */
  failure: unknown;
}

export class SyncedRateLimitStore implements SyncedCounters {
  readonly #redis: RedisCaller<RedisClient>;
  readonly #prefix: string;
  readonly #now: () => number;
  readonly #buckets = new Map<string, Bucket>();
  /** The buckets with hits to send, by sync interval, and the timer that sends them. */
  readonly #due = new Map<number, { buckets: Bucket[]; timer: NodeJS.Timeout }>();
  readonly #sending = new Set<Promise<void>>();
  readonly #maxBuckets: number;
  #sweepAt = 0;
  #closed = false;

  constructor(
    redis: RedisCaller<unknown>,
    prefix = 'sluice:rls:',
    now: () => number = Date.now,
    maxBuckets = MAX_BUCKETS,
  ) {
    this.#redis = redis as RedisCaller<RedisClient>;
    this.#prefix = prefix;
    this.#now = now;
    this.#maxBuckets = maxBuckets;
  }

  hit(name: string, windows: readonly Window[], syncMs: number, replicas = 1): Decision {
    const now = this.#now();
    if (now >= this.#sweepAt) this.#sweep(now);
    let b = this.#buckets.get(name);
    if (b !== undefined && b.windows !== windows) {
      // A new snapshot's plugin with the same windows keeps the bucket (and what it knows); other
      // windows start it afresh (an old bucket still queued sends its hits).
      if (sameWindows(b.windows, windows)) {
        b.windows = windows;
        b.syncMs = syncMs;
      } else b = undefined;
    }
    if (b === undefined) {
      b = {
        name,
        windows,
        slots: [],
        syncMs,
        lastHit: now,
        queued: false,
        syncing: false,
        failure: undefined,
      };
      this.#buckets.set(name, b);
    }
    b.lastHit = now;
    if (b.failure !== undefined) {
      this.#queue(b);
      throw b.failure;
    }
    let allowed = true;
    const counts: number[] = [];
    const resets: number[] = [];
    for (let i = 0; i < windows.length; i++) {
      const ms = windows[i].seconds * 1000;
      const number = Math.floor(now / ms);
      let s = b.slots[i];
      if (s === undefined || s.number !== number) {
        s = { number, shared: 0, unsent: 0, sending: 0 };
        b.slots[i] = s;
      }
      const since = s.unsent + s.sending;
      const count = s.shared + since;
      const share = Math.ceil((windows[i].limit - s.shared) / replicas);
      if (count + 1 > windows[i].limit || since + 1 > share) allowed = false;
      counts.push(count);
      resets.push(Math.ceil(((number + 1) * ms - now) / 1000));
    }
    if (allowed) {
      for (let i = 0; i < windows.length; i++) {
        b.slots[i].unsent++;
        counts[i]++;
      }
      this.#queue(b);
    }
    return { allowed, counts, resets };
  }

  /** Sends what is due now (on close: a draining replica's last hits count). */
  async close(): Promise<void> {
    this.#closed = true;
    for (const [syncMs, due] of this.#due) {
      clearTimeout(due.timer);
      this.#send(syncMs);
    }
    await Promise.allSettled(this.#sending);
  }

  get size(): number {
    return this.#buckets.size;
  }

  #queue(b: Bucket): void {
    if (b.queued || this.#closed) return;
    b.queued = true;
    let due = this.#due.get(b.syncMs);
    if (due === undefined) {
      const timer = setTimeout(() => this.#send(b.syncMs), b.syncMs);
      // Not what keeps a process alive: close() sends the last hits.
      timer.unref();
      due = { buckets: [], timer };
      this.#due.set(b.syncMs, due);
    }
    due.buckets.push(b);
  }

  #send(syncMs: number): void {
    const due = this.#due.get(syncMs);
    if (due === undefined) return;
    this.#due.delete(syncMs);
    for (const b of due.buckets) {
      b.queued = false;
      // One sync per bucket at a time: one in flight queues the bucket again when it ends.
      if (b.syncing) continue;
      const p = this.#sync(b);
      this.#sending.add(p);
      void p.finally(() => this.#sending.delete(p));
    }
  }

  async #sync(b: Bucket): Promise<void> {
    b.syncing = true;
    const now = this.#now();
    const keys: string[] = [];
    const adds: number[] = [];
    const ttls: number[] = [];
    b.windows.forEach((w, i) => {
      const ms = w.seconds * 1000;
      const number = Math.floor(now / ms);
      // A window that has ended drops its unsent hits: they belong to no counter still read.
      if (b.slots[i] === undefined || b.slots[i].number !== number)
        b.slots[i] = { number, shared: 0, unsent: 0, sending: 0 };
      const s = b.slots[i];
      s.sending = s.unsent;
      s.unsent = 0;
      keys.push(`${this.#prefix}{${b.name}}:${w.seconds}:${number}`);
      adds.push(s.sending);
      ttls.push((number + 1) * ms - now + GRACE_MS);
    });
    // The slots this sync is for: a window that ends before the answer has a new slot by then.
    const slots = b.slots.slice();
    try {
      const totals = await this.#redis.call('rate_limit_sync', (c) =>
        ADDS[keys.length].run<number[]>(c, [...keys, ...adds, ...ttls]),
      );
      slots.forEach((s, i) => {
        s.shared = totals[i];
        s.sending = 0;
      });
      b.failure = undefined;
    } catch (err) {
      // Not sent: kept for the next sync, sent at the next hit. Sent and maybe applied (a
      // deadline, a dropped connection): counted here but not sent again, which could count them
      // twice.
      const applied = (err as StoreUnavailableError).mayHaveApplied === true;
      for (const s of slots) {
        if (applied) s.shared += s.sending;
        else s.unsent += s.sending;
        s.sending = 0;
      }
      b.failure = err;
    } finally {
      b.syncing = false;
    }
    // Hits taken while this sync was in flight.
    if (b.failure === undefined && b.slots.some((s) => s.unsent > 0)) this.#queue(b);
  }

  /**
   * Drops the buckets whose every window has ended, and past maxBuckets the idle ones too, at most
   * once a second: memory stays bounded by the live ones.
   */
  #sweep(now: number): void {
    this.#sweepAt = now + 1000;
    const crowded = this.#buckets.size > this.#maxBuckets;
    for (const [name, b] of this.#buckets) {
      if (b.queued || b.syncing) continue;
      const live = b.windows.some((w, i) => b.slots[i]?.number === Math.floor(now / (w.seconds * 1000)));
      if (!live || (crowded && now - b.lastHit > IDLE_MS)) this.#buckets.delete(name);
    }
  }
}

const sameWindows = (a: readonly Window[], b: readonly Window[]) =>
  a.length === b.length && a.every((w, i) => w.seconds === b[i].seconds && w.limit === b[i].limit);
