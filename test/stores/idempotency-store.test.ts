/**
 * The idempotency store contract (spec §3's state table at the store level), run against the
 * Redis store on a real Redis (a unique key prefix per run) and against the memory store.
 * `advance(ms)` moves time: the memory store's injected clock, or a real wait for Redis, whose
 * TTLs and leases run on its own clock.
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { IdempotencyStore, StoredResponse } from '../../dataplane/stores/idempotency-store.ts';
import { MemoryIdempotencyStore } from '../../dataplane/stores/memory-idempotency-store.ts';
import { RedisCaller, createRedisClient } from '../../dataplane/stores/redis-connection.ts';
import { RedisIdempotencyStore } from '../../dataplane/stores/redis-idempotency-store.ts';
import { dropPrefix, sharedRedisUrl, startPrivateRedis, uniquePrefix } from '../helpers/redis.ts';

interface Harness {
  store: IdempotencyStore;
  advance(ms: number): Promise<void>;
  close(): Promise<void>;
}

async function memoryHarness(): Promise<Harness> {
  let now = 1_700_000_000_000;
  const store = new MemoryIdempotencyStore({ now: () => now });
  return {
    store,
    advance: async (ms) => {
      now += ms;
    },
    close: () => store.close(),
  };
}

async function redisHarness(): Promise<Harness> {
  const prefix = uniquePrefix('store');
  const client = createRedisClient(sharedRedisUrl);
  const caller = new RedisCaller(client, { timeoutMs: 2_000 });
  if (!(await caller.ready(5_000))) throw new Error(`no Redis at ${sharedRedisUrl}`);
  const store = new RedisIdempotencyStore(caller, prefix);
  return {
    store,
    advance: (ms) => sleep(ms),
    close: async () => {
      await dropPrefix(sharedRedisUrl, prefix);
      await caller.close();
    },
  };
}

const response = (status = 201, body: Buffer | string = '{"id":"ch_1"}'): StoredResponse => ({
  status,
  headers: [
    ['content-type', 'application/json'],
    ['location', '/charges/ch_1'],
    ['x-multi', 'a'],
    ['x-multi', 'b'],
  ],
  body: Buffer.from(body),
  bodyOmitted: false,
});

// Short durations so the Redis run stays quick; the memory run jumps its clock by the same amounts.
const TTL = 600;
const LEASE = 200;

describe.each([
  ['memory', memoryHarness],
  ['redis', redisHarness],
])('idempotency store: %s', (_name, make) => {
  let h: Harness;
  beforeAll(async () => {
    h = await make();
  });
  afterAll(() => h.close());

  const fresh = () => ({
    id: randomUUID(),
    fingerprint: 'a'.repeat(64),
    owner: randomUUID(),
    ttlMs: TTL,
    leaseMs: LEASE,
  });

  it('no record → claimed; the same request again finds it IN_PROGRESS under a live lease', async () => {
    const req = fresh();
    expect(await h.store.claim(req)).toEqual({ outcome: 'claimed' });
    const again = await h.store.claim({ ...req, owner: randomUUID() });
    expect(again.outcome).toBe('found');
    if (again.outcome !== 'found') return;
    expect(again.record).toMatchObject({
      state: 'IN_PROGRESS',
      fingerprint: req.fingerprint,
      leased: true,
      response: null,
    });
    expect(again.record.createdAt).toBeGreaterThan(1_600_000_000_000);
  });

  it('complete by the owner → COMPLETED with status, headers (repeated ones too) and binary body', async () => {
    const req = fresh();
    await h.store.claim(req);
    const body = Buffer.from([0, 255, 1, 254, 10, 13]);
    expect(await h.store.complete(req.id, req.owner, response(201, body))).toBe(true);
    const found = await h.store.claim({ ...req, owner: randomUUID() });
    expect(found.outcome).toBe('found');
    if (found.outcome !== 'found') return;
    expect(found.record.state).toBe('COMPLETED');
    expect(found.record.leased).toBe(false);
    expect(found.record.response?.status).toBe(201);
    expect(found.record.response?.headers).toEqual(response().headers);
    expect(Buffer.compare(found.record.response!.body, body)).toBe(0);
    expect(found.record.response?.bodyOmitted).toBe(false);
  });

  it('a UTF-8 body, small or over 16 KiB, comes back byte for byte', async () => {
    // The Redis store sends a small UTF-8 body as a string and a larger one as a Buffer.
    for (const text of ['{"name":"café €5 日本"}', `{"pad":"${'ü€'.repeat(6_000)}"}`]) {
      const req = fresh();
      await h.store.claim(req);
      const body = Buffer.from(text);
      expect(await h.store.complete(req.id, req.owner, response(200, body))).toBe(true);
      const stored = (await h.store.get(req.id))?.response?.body;
      expect(stored && Buffer.compare(stored, body)).toBe(0);
    }
  });

  it('a response stored without its body keeps the flag', async () => {
    const req = fresh();
    await h.store.claim(req);
    await h.store.complete(req.id, req.owner, { ...response(), body: Buffer.alloc(0), bodyOmitted: true });
    expect((await h.store.get(req.id))?.response).toMatchObject({ status: 201, bodyOmitted: true });
  });

  it('only the owner completes, renews or releases', async () => {
    const req = fresh();
    await h.store.claim(req);
    const stranger = randomUUID();
    expect(await h.store.complete(req.id, stranger, response())).toBe(false);
    expect(await h.store.renew(req.id, stranger, LEASE)).toBe(false);
    await h.store.release(req.id, stranger);
    expect((await h.store.get(req.id))?.state).toBe('IN_PROGRESS');
  });

  it('the same key with another fingerprint is found, never taken over, even with a lapsed lease', async () => {
    const req = fresh();
    await h.store.claim(req);
    await h.advance(LEASE + 50);
    const other = await h.store.claim({ ...req, fingerprint: 'b'.repeat(64), owner: randomUUID() });
    expect(other.outcome).toBe('found');
    if (other.outcome === 'found')
      expect(other.record).toMatchObject({ fingerprint: req.fingerprint, leased: false });
  });

  it('a lapsed lease is taken over once; the old owner can then neither complete nor renew', async () => {
    const req = fresh();
    await h.store.claim(req);
    await h.advance(LEASE + 50);
    const next = { ...req, owner: randomUUID() };
    expect(await h.store.claim(next)).toEqual({ outcome: 'takeover' });
    expect((await h.store.claim({ ...req, owner: randomUUID() })).outcome).toBe('found');
    expect(await h.store.complete(req.id, req.owner, response(500))).toBe(false);
    expect(await h.store.renew(req.id, req.owner, LEASE)).toBe(false);
    expect(await h.store.complete(req.id, next.owner, response(201))).toBe(true);
    expect((await h.store.get(req.id))?.response?.status).toBe(201);
  });

  it('renewing keeps the lease alive past its first term', async () => {
    const req = fresh();
    await h.store.claim(req);
    for (let i = 0; i < 3; i++) {
      await h.advance(LEASE / 2);
      expect(await h.store.renew(req.id, req.owner, LEASE)).toBe(true);
    }
    expect((await h.store.claim({ ...req, owner: randomUUID() })).outcome).toBe('found');
  });

  it('release removes an IN_PROGRESS record: the next request is a fresh claim', async () => {
    const req = fresh();
    await h.store.claim(req);
    await h.store.release(req.id, req.owner);
    expect(await h.store.get(req.id)).toBeNull();
    expect(await h.store.claim({ ...req, owner: randomUUID() })).toEqual({ outcome: 'claimed' });
  });

  it('release leaves a COMPLETED record alone', async () => {
    const req = fresh();
    await h.store.claim(req);
    await h.store.complete(req.id, req.owner, response());
    await h.store.release(req.id, req.owner);
    expect((await h.store.get(req.id))?.state).toBe('COMPLETED');
  });

  it('the TTL counts from creation: completing does not extend it; after it the key is fresh', async () => {
    const req = fresh();
    await h.store.claim(req);
    await h.advance(TTL / 2);
    await h.store.complete(req.id, req.owner, response());
    expect((await h.store.get(req.id))?.state).toBe('COMPLETED');
    await h.advance(TTL / 2 + 100);
    expect(await h.store.get(req.id)).toBeNull();
    expect(await h.store.claim({ ...req, owner: randomUUID() })).toEqual({ outcome: 'claimed' });
  });

  it('of 50 concurrent claims of one key exactly one wins', async () => {
    const req = fresh();
    const results = await Promise.all(
      Array.from({ length: 50 }, () => h.store.claim({ ...req, owner: randomUUID() })),
    );
    expect(results.filter((r) => r.outcome === 'claimed')).toHaveLength(1);
    expect(results.filter((r) => r.outcome === 'found')).toHaveLength(49);
  });

  it('get of an unknown id is null', async () => {
    expect(await h.store.get(randomUUID())).toBeNull();
  });
});

describe('memory store cleanup', () => {
  it('the periodic sweep removes expired records (spec §8 rule 1)', async () => {
    let now = 0;
    const store = new MemoryIdempotencyStore({ now: () => now });
    await store.claim({ id: 'a', fingerprint: 'f', owner: 'o', ttlMs: 100, leaseMs: 50 });
    await store.claim({ id: 'b', fingerprint: 'f', owner: 'o', ttlMs: 1_000, leaseMs: 50 });
    now = 500;
    expect(store.sweep()).toBe(1);
    expect(store.size).toBe(1);
    await store.close();
  });
});

describe('redis store: scripts the server no longer has', () => {
  it('after SCRIPT FLUSH (a restart, a failover) every operation still works, once each', async () => {
    // A private server: SCRIPT FLUSH empties the script cache of everyone on that Redis.
    const redis = await startPrivateRedis();
    const caller = new RedisCaller(createRedisClient(redis.url), { timeoutMs: 2_000 });
    try {
      expect(await caller.ready(5_000)).toBe(true);
      const store = new RedisIdempotencyStore(caller, uniquePrefix('noscript'));
      const flush = () => caller.client.script('FLUSH');
      const req = { id: randomUUID(), fingerprint: 'f', owner: randomUUID(), ttlMs: 60_000, leaseMs: 5_000 };
      await flush();
      expect(await store.claim(req)).toEqual({ outcome: 'claimed' });
      await flush();
      expect(await store.renew(req.id, req.owner, 5_000)).toBe(true);
      await flush();
      expect(await store.complete(req.id, req.owner, response())).toBe(true);
      await flush();
      const found = await store.claim({ ...req, owner: randomUUID() });
      expect(found.outcome === 'found' && found.record.state).toBe('COMPLETED');
      await flush();
      expect((await store.get(req.id))?.state).toBe('COMPLETED');
      // Claimed once: the record was created by the first claim and never again.
      const other = { ...req, id: randomUUID() };
      await flush();
      expect(await store.claim(other)).toEqual({ outcome: 'claimed' });
      await flush();
      await store.release(other.id, other.owner);
      expect(await store.get(other.id)).toBeNull();
    } finally {
      await caller.close();
      await redis.stop();
    }
  });
});
