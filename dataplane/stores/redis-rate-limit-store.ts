/**
 * Rate-limit counters in Redis, shared by every replica: one script per decision (one round
 * trip), time from Redis, one key per window under one hash tag (one Cluster slot), each with
 * an expiry at its window's end. The bucket name is hashed by the caller.
 *
 * Optimization: the hits a process takes for one bucket in one turn of the event loop go to
 * Redis as one script call counting them all (measured under load: a Redis command costs this
 * process ~5 µs of ioredis, socket writes and garbage, about a third of the jwt + rate-limit +
 * transformer chain). The decisions are exactly those of the same hits sent one by one in arrival
 * order: a batch of n admits min(n, the room left in its fullest window), the first ones, and
 * the counts each hit sees are those it would have seen alone. A hit waits at most the rest of
 * the current turn (setImmediate runs once the ready sockets have been read).
 */
import { type HitWaiter, MAX_WINDOWS, type RateLimitStore, type Window } from './rate-limit-store.ts';
import type { RedisCaller, RedisClient } from './redis-connection.ts';
import { RedisScript } from './redis-script.ts';

// KEYS: one counter per window. ARGV: limits, then window lengths in seconds, then the number of
// hits. Returns the hits admitted, the counts before them, the seconds to each window's reset.
const HIT = `
local now = tonumber(redis.call('TIME')[1])
local n = #KEYS
local admit = tonumber(ARGV[2 * n + 1])
local counts, resets = {}, {}
for i = 1, n do
  local w = tonumber(ARGV[n + i])
  counts[i] = tonumber(redis.call('GET', KEYS[i]) or '0')
  resets[i] = w - (now % w)
  local room = tonumber(ARGV[i]) - counts[i]
  if room < admit then admit = math.max(room, 0) end
end
if admit > 0 then
  for i = 1, n do
    if redis.call('INCRBY', KEYS[i], admit) == admit then redis.call('EXPIREAT', KEYS[i], now + resets[i]) end
  end
end
local out = { admit }
for i = 1, n do out[1 + i] = counts[i]; out[1 + n + i] = resets[i] end
return out
`;

/**
 * The script by number of windows, each declaring its keys: a Cluster sends a script by the slot
 * of its keys (redis-script.ts: EVALSHA, no ioredis Script wrapper per call).
 */
const HITS = Array.from({ length: MAX_WINDOWS + 1 }, (_, n) => new RedisScript(HIT, n));

/** The hits on one bucket with one set of windows, waiting for the end of this turn. */
interface Batch {
  bucket: string;
  windows: readonly Window[];
  waiters: HitWaiter[];
}

export class RedisRateLimitStore implements RateLimitStore {
  readonly #redis: RedisCaller<RedisClient>;
  readonly #prefix: string;
  /** This turn's batches, by bucket then by windows (each plugin instance has its own array). */
  #pending = new Map<string, Batch[]>();
  #scheduled = false;
  readonly #flush = () => this.#send();

  constructor(redis: RedisCaller<unknown>, prefix = 'sluice:rl:') {
    this.#redis = redis as RedisCaller<RedisClient>;
    this.#prefix = prefix;
  }

  hit(bucket: string, windows: readonly Window[], waiter: HitWaiter): undefined {
    let batches = this.#pending.get(bucket);
    if (batches === undefined) {
      batches = [];
      this.#pending.set(bucket, batches);
    }
    let batch = batches.find((b) => b.windows === windows);
    if (batch === undefined) {
      batch = { bucket, windows, waiters: [] };
      batches.push(batch);
    }
    batch.waiters.push(waiter);
    if (!this.#scheduled) {
      this.#scheduled = true;
      setImmediate(this.#flush);
    }
    return undefined;
  }

  #send(): void {
    const pending = this.#pending;
    this.#pending = new Map();
    this.#scheduled = false;
    for (const batches of pending.values()) for (const b of batches) this.#call(b);
  }

  #call({ bucket, windows, waiters }: Batch): void {
    const n = windows.length;
    // One hash tag per bucket: its windows' counters share a slot, so one script sees them all.
    const keys = windows.map((w) => `${this.#prefix}{${bucket}}:${w.seconds}`);
    const args = [...windows.map((w) => w.limit), ...windows.map((w) => w.seconds), waiters.length];
    this.#redis
      .call('rate_limit', (c) => HITS[n].run<number[]>(c, [...keys, ...args]))
      .then(
        (r) => {
          const admitted = r[0];
          const before = r.slice(1, 1 + n);
          const resets = r.slice(1 + n, 1 + 2 * n);
          waiters.forEach((w, j) => {
            // The j-th hit alone would have seen j earlier hits counted (all of them admitted while
            // j < admitted), and itself when admitted.
            const seen = Math.min(j + 1, admitted);
            w.decided({
              allowed: j < admitted,
              counts: before.map((c) => c + seen),
              resets,
            });
          });
        },
        (err) => {
          for (const w of waiters) w.failed(err);
        },
      );
  }
}
