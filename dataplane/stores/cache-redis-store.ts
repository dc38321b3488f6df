/**
 * Cache entries in Redis, shared by every data-plane replica: one string key per entry
 * (`<prefix>e:<key>`, cache-store.ts's encoding) with its TTL (PX), so Redis expiry is the
 * cleanup and maxmemory policies apply. Entries over maxEntryBytes are never written (the
 * plugin checks before).
 *
 * The miss lock is one key (`<prefix>l:<key>`, SET NX PX, released by a compare-and-delete
 * script), not Redlock: Redlock needs N independent masters and buys mutual exclusion that
 * survives a master's failure; here a lost or doubled lock costs one extra upstream call,
 * never a wrong answer, so one key on the Redis the entries live in is the right price.
 */
import type { Cluster, Redis } from 'ioredis';
import { type CacheEntry, type CacheStore, decodeEntry, encodeEntry } from './cache-store.ts';
import type { RedisCaller } from './redis-connection.ts';

const UNLOCK = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`;

interface Commands {
  mgetBuffer(...keys: string[]): Promise<(Buffer | null)[]>;
  set(key: string, value: Buffer, px: 'PX', ms: number): Promise<unknown>;
  set(key: string, value: string, px: 'PX', ms: number, nx: 'NX'): Promise<'OK' | null>;
  sluiceCacheUnlock(key: string, owner: string): Promise<number>;
  scan(
    cursor: string,
    match: 'MATCH',
    pattern: string,
    count: 'COUNT',
    n: number,
  ): Promise<[string, string[]]>;
  unlink(...keys: string[]): Promise<number>;
}

export function defineCacheScripts(client: Redis | Cluster): void {
  client.defineCommand('sluiceCacheUnlock', { numberOfKeys: 1, lua: UNLOCK });
}

/** Glob-escapes a prefix for SCAN MATCH. */
const globEscape = (s: string) => s.replace(/[*?[\]\\]/g, '\\$&');

export class RedisCacheStore implements CacheStore {
  readonly kind = 'redis' as const;
  readonly #redis: RedisCaller<Commands>;
  readonly #entries: string;
  readonly #locks: string;

  constructor(redis: RedisCaller<unknown>, prefix = 'sluice:cache:') {
    this.#redis = redis as RedisCaller<Commands>;
    this.#entries = `${prefix}e:`;
    this.#locks = `${prefix}l:`;
  }

  async get(keys: readonly string[]): Promise<CacheEntry | null> {
    const names = keys.map((k) => this.#entries + k);
    // MGET: one round trip for the caller's own key and the shared one (keys of one request
    // differ only after the path; on Redis Cluster they would need a hash tag, see the README).
    const values = await this.#redis.call('cache_get', (c) => c.mgetBuffer(...names));
    for (const v of values) if (v !== null) return decodeEntry(v);
    return null;
  }

  async set(key: string, entry: CacheEntry, ttlMs: number): Promise<void> {
    const value = encodeEntry(entry);
    await this.#redis.call('cache_set', (c) => c.set(this.#entries + key, value, 'PX', Math.max(1, ttlMs)));
  }

  async delete(keys: readonly string[]): Promise<void> {
    const names = keys.map((k) => this.#entries + k);
    await this.#redis.call('cache_delete', (c) => c.unlink(...names));
  }

  async lock(key: string, owner: string, ttlMs: number): Promise<boolean> {
    const r = await this.#redis.call('cache_lock', (c) => c.set(this.#locks + key, owner, 'PX', ttlMs, 'NX'));
    return r === 'OK';
  }

  async unlock(key: string, owner: string): Promise<void> {
    await this.#redis.call('cache_unlock', (c) => c.sluiceCacheUnlock(this.#locks + key, owner));
  }

  /** SCAN + UNLINK in batches of 500: never KEYS, never one huge command. */
  async purge(prefix: string): Promise<number> {
    const pattern = `${globEscape(this.#entries + prefix)}*`;
    let cursor = '0';
    let n = 0;
    do {
      const [next, keys] = await this.#redis.call(
        'cache_purge',
        (c) => c.scan(cursor, 'MATCH', pattern, 'COUNT', 500),
        10_000,
      );
      cursor = next;
      if (keys.length) n += await this.#redis.call('cache_purge', (c) => c.unlink(...keys), 10_000);
    } while (cursor !== '0');
    return n;
  }
}
