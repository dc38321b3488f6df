/**
 * The proxy-cache stores: memory (LRU by bytes, expiry, purge by prefix) and Redis (one key per
 * entry with its TTL, binary-safe bodies, the single-key miss lock, SCAN + UNLINK purge),
 * the latter against the test Redis under a prefix of its own.
 */
import CachePolicy from 'http-cache-semantics';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryCacheStore } from '../../dataplane/stores/cache-memory-store.ts';
import { RedisCacheStore } from '../../dataplane/stores/cache-redis-store.ts';
import type { CacheEntry } from '../../dataplane/stores/cache-store.ts';
import { CacheStores } from '../../dataplane/stores/cache-stores.ts';
import { createRedisClient, RedisCaller } from '../../dataplane/stores/redis-connection.ts';
import { dropPrefix, sharedRedisUrl, uniquePrefix } from '../helpers/redis.ts';

const entry = (body: Buffer | string, cc = 'max-age=60'): CacheEntry => ({
  status: 200,
  body: Buffer.isBuffer(body) ? body : Buffer.from(body),
  policy: new CachePolicy(
    { url: '/x', method: 'GET', headers: { host: 'h' } },
    { status: 200, headers: { 'cache-control': cc, etag: '"e1"' } },
  ),
});

describe('MemoryCacheStore', () => {
  it('evicts the least recently used entries when the bytes bound is reached; a hit counts as use', () => {
    const store = new MemoryCacheStore(3 * (1000 + 512));
    store.set('a', entry('a'.repeat(1000)), 60_000);
    store.set('b', entry('b'.repeat(1000)), 60_000);
    store.set('c', entry('c'.repeat(1000)), 60_000);
    expect(store.get(['a'])).not.toBeNull(); // a is now the most recent
    store.set('d', entry('d'.repeat(1000)), 60_000);
    expect(store.get(['b'])).toBeNull();
    expect(store.get(['a'])?.body.toString()).toBe('a'.repeat(1000));
    expect(store.get(['c'])).not.toBeNull();
    expect(store.bytes).toBeLessThanOrEqual(store.maxBytes);
  });

  it('never keeps an entry larger than the bound; replacing an entry frees its bytes', () => {
    const store = new MemoryCacheStore(2000);
    store.set('big', entry('x'.repeat(5000)), 60_000);
    expect(store.get(['big'])).toBeNull();
    store.set('k', entry('1'.repeat(100)), 60_000);
    store.set('k', entry('2'.repeat(100)), 60_000);
    expect(store.size).toBe(1);
    expect(store.bytes).toBe(100 + 512);
  });

  it('an expired entry is gone; get returns the first of the keys that holds one', () => {
    let now = 1_000;
    const store = new MemoryCacheStore(1 << 20, () => now);
    store.set('old', entry('o'), 10);
    store.set('shared', entry('s'), 1_000);
    now += 20;
    expect(store.get(['old'])).toBeNull();
    expect(store.get(['mine', 'shared'])?.body.toString()).toBe('s');
    expect(store.bytes).toBe(1 + 512);
  });

  it('purges by key prefix', async () => {
    const store = new MemoryCacheStore(1 << 20);
    for (const k of ['/a/1?|GET', '/a/2?|GET', '/b/1?|GET']) store.set(k, entry(k), 60_000);
    expect(await store.purge('/a/')).toBe(2);
    expect(store.get(['/b/1?|GET'])).not.toBeNull();
    expect(store.get(['/a/1?|GET'])).toBeNull();
  });

  it('CacheStores: one memory store per bound, kept while a plugin holds it, dropped after', async () => {
    const stores = new CacheStores(null);
    const first = stores.acquireMemory(1 << 20);
    first.store.set('/k', entry('v'), 60_000);
    const next = stores.acquireMemory(1 << 20); // the next snapshot's plugin, before the old one closes
    first.release();
    expect(next.store).toBe(first.store);
    expect(next.store.get(['/k'])).not.toBeNull();
    expect(await stores.purge('/')).toBe(1);
    next.release();
    expect(stores.acquireMemory(1 << 20).store).not.toBe(first.store);
  });
});

describe('RedisCacheStore', () => {
  const prefix = uniquePrefix('cache-store');
  let caller: RedisCaller<unknown>;
  let store: RedisCacheStore;
  let raw: Redis;

  beforeAll(async () => {
    const client = createRedisClient(sharedRedisUrl);
    caller = new RedisCaller(client);
    await caller.ready(5_000);
    store = new RedisCacheStore(caller, prefix);
    raw = new Redis(sharedRedisUrl);
  });
  afterAll(async () => {
    await dropPrefix(sharedRedisUrl, prefix);
    await caller.close();
    raw.disconnect();
  });

  it('stores one key per entry with its TTL; binary bodies and the policy come back whole', async () => {
    const body = Buffer.from([0, 255, 1, 254, 10, 13]);
    await store.set('/bin?|GET', entry(body), 30_000);
    const ttl = await raw.pttl(`${prefix}e:{/bin?|GET}`);
    expect(ttl).toBeGreaterThan(25_000);
    expect(ttl).toBeLessThanOrEqual(30_000);
    const got = await store.get(['/bin?|GET']);
    expect(got?.status).toBe(200);
    expect(got?.body.equals(body)).toBe(true);
    expect(got?.policy.responseHeaders().etag).toBe('"e1"');
    expect(got?.policy.stale()).toBe(false);
  });

  it("get reads the caller's key first, then the shared one, in one MGET", async () => {
    await store.set('/two|c=alice', entry('mine'), 30_000);
    await store.set('/two', entry('shared'), 30_000);
    expect((await store.get(['/two|c=alice', '/two']))?.body.toString()).toBe('mine');
    expect((await store.get(['/two|c=bob', '/two']))?.body.toString()).toBe('shared');
    expect(await store.get(['/none'])).toBeNull();
  });

  it('delete removes the named entries only', async () => {
    await store.set('/d|c=a', entry('a'), 30_000);
    await store.set('/d', entry('s'), 30_000);
    await store.delete(['/d|c=a', '/none']);
    expect(await store.get(['/d|c=a'])).toBeNull();
    expect(await store.get(['/d'])).not.toBeNull();
  });

  it('the miss lock: one holder at a time, released only by its owner, lapses by itself', async () => {
    expect(await store.lock('/l', 'one', 5_000)).toBe(true);
    expect(await store.lock('/l', 'two', 5_000)).toBe(false);
    await store.unlock('/l', 'two'); // not the owner: nothing happens
    expect(await store.lock('/l', 'two', 5_000)).toBe(false);
    await store.unlock('/l', 'one');
    expect(await store.lock('/l', 'two', 100)).toBe(true);
    await new Promise((r) => setTimeout(r, 150));
    expect(await store.lock('/l', 'three', 100)).toBe(true);
  });

  it('purges by prefix with SCAN + UNLINK; glob characters in the prefix are literal', async () => {
    for (let i = 0; i < 1200; i++) await store.set(`/p/${i}?|GET`, entry('x'), 30_000);
    await store.set('/p*/literal', entry('x'), 30_000);
    await store.set('/q/1', entry('x'), 30_000);
    expect(await store.purge('/p*')).toBe(1);
    expect(await store.purge('/p/')).toBe(1200);
    expect(await store.get(['/p/5?|GET'])).toBeNull();
    expect(await store.get(['/q/1'])).not.toBeNull();
  });
});
