/**
 * Cache entries in Redis, shared by every data-plane replica: one string key per entry
 * (`<prefix>e:{<shared key>}[<caller part>]`, see cache-store.ts) with its TTL (PX), so Redis
 * expiry is the cleanup and maxmemory policies apply. The braces are a hash tag: a caller's
 * entry and the shared one of the same resource live on one Redis Cluster slot, so a lookup
 * (MGET of both) and an invalidation (UNLINK of both) are one command on any topology. Entries
 * over maxEntryBytes are never written (the plugin checks before).
 *
 * The miss lock is one key (`<prefix>l:<key>`, SET NX PX, released by a compare-and-delete
 * script), not Redlock: Redlock needs N independent masters and buys mutual exclusion that
 * survives a master's failure; here a lost or doubled lock costs one extra upstream call,
 * never a wrong answer, so one key on the Redis the entries live in is the right price.
 *
 * A purge scans every master (a Cluster's keys are spread over them; one Redis is its own only
 * master) and deletes key by key, each command on its own slot.
 */
import { Cluster, type Redis } from 'ioredis';
import { type CacheEntry, type CacheStore, callerPartAt, decodeEntry, encodeEntry } from './cache-store.ts';
import type { RedisCaller, RedisClient } from './redis-connection.ts';
import { RedisScript } from './redis-script.ts';

// One key: a Cluster sends it by that key's slot.
const UNLOCK = new RedisScript(
  `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`,
  1,
);

interface Commands {
  mgetBuffer(...keys: string[]): Promise<(Buffer | null)[]>;
  set(key: string, value: Buffer, px: 'PX', ms: number): Promise<unknown>;
  set(key: string, value: string, px: 'PX', ms: number, nx: 'NX'): Promise<'OK' | null>;
  scan(
    cursor: string,
    match: 'MATCH',
    pattern: string,
    count: 'COUNT',
    n: number,
  ): Promise<[string, string[]]>;
  unlink(key: string): Promise<number>;
  unlink(...keys: string[]): Promise<number>;
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

  /** The Redis key of an entry: its shared part is the hash tag. */
  #name(key: string): string {
    const at = callerPartAt(key);
    return at === key.length
      ? `${this.#entries}{${key}}`
      : `${this.#entries}{${key.slice(0, at)}}${key.slice(at)}`;
  }

  async get(keys: readonly string[]): Promise<CacheEntry | null> {
    // MGET: one round trip for the caller's own key and the shared one (one hash tag, one slot).
    const names = keys.map((k) => this.#name(k));
    const values = await this.#redis.call('cache_get', (c) => c.mgetBuffer(...names));
    for (const v of values) if (v !== null) return decodeEntry(v);
    return null;
  }

  async set(key: string, entry: CacheEntry, ttlMs: number): Promise<void> {
    const value = encodeEntry(entry);
    await this.#redis.call('cache_set', (c) => c.set(this.#name(key), value, 'PX', Math.max(1, ttlMs)));
  }

  async delete(keys: readonly string[]): Promise<void> {
    const names = keys.map((k) => this.#name(k));
    await this.#redis.call('cache_delete', (c) => c.unlink(...names));
  }

  async lock(key: string, owner: string, ttlMs: number): Promise<boolean> {
    const r = await this.#redis.call('cache_lock', (c) => c.set(this.#locks + key, owner, 'PX', ttlMs, 'NX'));
    return r === 'OK';
  }

  async unlock(key: string, owner: string): Promise<void> {
    await this.#redis.call('cache_unlock', (c) =>
      UNLOCK.run(c as unknown as RedisClient, [this.#locks + key, owner]),
    );
  }

  /**
   * SCAN every master + UNLINK in batches of 500: never KEYS, never one huge command. Each key is
   * unlinked alone (routed to its slot's master), so the count is of entries really removed.
   */
  async purge(prefix: string): Promise<number> {
    // Keys start with the path inside the hash tag's brace.
    const pattern = `${globEscape(`${this.#entries}{${prefix}`)}*`;
    const client = this.#redis.client;
    const masters: Redis[] = client instanceof Cluster ? client.nodes('master') : [client];
    const counts = await Promise.all(masters.map((node) => this.#purgeNode(node, pattern)));
    return counts.reduce((a, b) => a + b, 0);
  }

  async #purgeNode(node: Redis, pattern: string): Promise<number> {
    let cursor = '0';
    let n = 0;
    do {
      const [next, keys] = await this.#redis.call(
        'cache_purge',
        () => node.scan(cursor, 'MATCH', pattern, 'COUNT', 500),
        10_000,
      );
      cursor = next;
      const removed = await Promise.all(
        keys.map((k) => this.#redis.call('cache_purge', (c) => c.unlink(k), 10_000)),
      );
      for (const r of removed) n += r;
    } while (cursor !== '0');
    return n;
  }
}
