/**
 * Rate-limit counters in Redis, shared by every replica: one script per decision (one round
 * trip), time from Redis, one key per window under one hash tag (one Cluster slot), each with
 * an expiry at its window's end. The bucket name is hashed by the caller.
 */
import type { Decision, RateLimitStore, Window } from './rate-limit-store.ts';
import type { RedisCaller, RedisClient } from './redis-connection.ts';

// KEYS: one counter per window. ARGV: limits, then window lengths in seconds.
const HIT = `
local now = tonumber(redis.call('TIME')[1])
local n = #KEYS
local counts, resets, ok = {}, {}, 1
for i = 1, n do
  local w = tonumber(ARGV[n + i])
  counts[i] = tonumber(redis.call('GET', KEYS[i]) or '0')
  resets[i] = w - (now % w)
  if counts[i] + 1 > tonumber(ARGV[i]) then ok = 0 end
end
if ok == 1 then
  for i = 1, n do
    counts[i] = redis.call('INCR', KEYS[i])
    if counts[i] == 1 then redis.call('EXPIREAT', KEYS[i], now + resets[i]) end
  end
end
local out = { ok }
for i = 1, n do out[1 + i] = counts[i]; out[1 + n + i] = resets[i] end
return out
`;

interface Scripts {
  sluiceRateHit(numKeys: number, ...args: (string | number)[]): Promise<number[]>;
}

export function defineRateLimitScripts(client: RedisClient): void {
  client.defineCommand('sluiceRateHit', { lua: HIT });
}

export class RedisRateLimitStore implements RateLimitStore {
  readonly #redis: RedisCaller<Scripts>;
  readonly #prefix: string;

  constructor(redis: RedisCaller<unknown>, prefix = 'sluice:rl:') {
    this.#redis = redis as RedisCaller<Scripts>;
    this.#prefix = prefix;
  }

  async hit(bucket: string, windows: readonly Window[]): Promise<Decision> {
    const keys = windows.map((w) => `${this.#prefix}{${bucket}}:${w.seconds}`);
    const args = [...windows.map((w) => w.limit), ...windows.map((w) => w.seconds)];
    const r = await this.#redis.call('rate_limit', (c) => c.sluiceRateHit(keys.length, ...keys, ...args));
    const n = windows.length;
    return { allowed: r[0] === 1, counts: r.slice(1, 1 + n), resets: r.slice(1 + n, 1 + 2 * n) };
  }
}
