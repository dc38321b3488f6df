/**
 * The Redis store on the topologies a deployment uses, started here as real servers on free
 * loopback ports: a Redis Cluster of three masters and their replicas (redis-cluster:// URL) and a master watched by
 * a Sentinel (redis-sentinel:// URL). Records must spread over the cluster's slots, and every
 * script must run in one slot (the hash tag keeps a record and its lease together).
 */
import { randomUUID } from 'node:crypto';
import { Cluster, Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { IdempotencyStore } from '../../dataplane/stores/idempotency-store.ts';
import { RedisCaller, createRedisClient } from '../../dataplane/stores/redis-connection.ts';
import { RedisIdempotencyStore } from '../../dataplane/stores/redis-idempotency-store.ts';
import { startRedisCluster, type TestRedisCluster } from '../helpers/redis-cluster.ts';
import { startRedisSentinel, type TestRedisSentinel } from '../helpers/redis-sentinel.ts';

async function storeFor(url: string): Promise<{ store: IdempotencyStore; caller: RedisCaller<unknown> }> {
  const client = createRedisClient(url);
  const caller = new RedisCaller(client, { timeoutMs: 3_000 });
  if (!(await caller.ready(10_000))) throw new Error(`not ready: ${url} (${client.status})`);
  return { store: new RedisIdempotencyStore(caller, 'sluice-topology:'), caller };
}

async function exerciseStore(store: IdempotencyStore): Promise<string[]> {
  const ids = Array.from({ length: 40 }, () => randomUUID());
  for (const id of ids) {
    const owner = randomUUID();
    expect(await store.claim({ id, fingerprint: 'f', owner, ttlMs: 60_000, leaseMs: 5_000 })).toEqual({
      outcome: 'claimed',
    });
    expect(await store.renew(id, owner, 5_000)).toBe(true);
    expect(
      await store.complete(id, owner, {
        status: 201,
        headers: [['x', 'y']],
        body: Buffer.from(id),
        bodyOmitted: false,
      }),
    ).toBe(true);
    const found = await store.claim({
      id,
      fingerprint: 'f',
      owner: randomUUID(),
      ttlMs: 60_000,
      leaseMs: 5_000,
    });
    expect(found.outcome === 'found' && found.record.response?.body.toString()).toBe(id);
  }
  // Claims and completions of one turn (one script call each on a single Redis; on a Cluster one
  // call per record, whose keys sit in slots of their own).
  const together = Array.from({ length: 20 }, () => ({ id: randomUUID(), owner: randomUUID() }));
  const claimed = await Promise.all(
    together.map(({ id, owner }) =>
      store.claim({ id, fingerprint: 'f', owner, ttlMs: 60_000, leaseMs: 5_000 }),
    ),
  );
  expect(claimed).toEqual(Array(20).fill({ outcome: 'claimed' }));
  const stored = await Promise.all(
    together.map(({ id, owner }) =>
      store.complete(id, owner, { status: 200, headers: [], body: Buffer.from(id), bodyOmitted: false }),
    ),
  );
  expect(stored).toEqual(Array(20).fill(true));
  const racer = randomUUID();
  const race = await Promise.all(
    Array.from({ length: 20 }, () =>
      store.claim({ id: racer, fingerprint: 'f', owner: randomUUID(), ttlMs: 60_000, leaseMs: 5_000 }),
    ),
  );
  expect(race.filter((r) => r.outcome === 'claimed')).toHaveLength(1);
  return ids;
}

describe('Redis Cluster (redis-cluster://)', () => {
  let cluster: TestRedisCluster;

  // No failover here: a node timeout long enough that a loaded machine never has a node marked
  // failed (the failover tests are test/stores/redis-cluster-stall.test.ts and make reliability).
  beforeAll(async () => {
    cluster = await startRedisCluster({ nodeTimeoutMs: 15_000 });
  }, 60_000);
  afterAll(async () => {
    await cluster?.stop();
  });

  // The third master is learnt from the slot map and connected only then: a readiness check sent
  // to it while it connected was refused and closed the whole client, which started over (about
  // one client in three, more under load).
  it('ten clients started at once each become ready without closing and starting over', async () => {
    const clients = Array.from({ length: 10 }, () => {
      const client = createRedisClient(cluster.url);
      const seen: string[] = [];
      for (const status of ['close', 'reconnecting', 'end']) client.on(status, () => seen.push(status));
      return { caller: new RedisCaller(client, { timeoutMs: 3_000 }), seen };
    });
    try {
      const ready = await Promise.all(clients.map((c) => c.caller.ready(10_000)));
      expect(ready).toEqual(Array(10).fill(true));
      expect(clients.flatMap((c) => c.seen)).toEqual([]);
      for (const c of clients)
        expect(c.caller.client instanceof Cluster && c.caller.client.nodes('master')).toHaveLength(3);
    } finally {
      await Promise.all(clients.map((c) => c.caller.close()));
    }
  });

  it('claims, renews, completes and replays across the cluster; records spread over the masters', async () => {
    const { store, caller } = await storeFor(cluster.url);
    try {
      await exerciseStore(store);
      const holding = await Promise.all(
        (await cluster.masters()).map(async (n) => {
          const r = new Redis({ port: n.port });
          const keys = await r.keys('sluice-topology:*');
          r.disconnect();
          return keys;
        }),
      );
      // Each record's hash and lease sit on the same node; records are spread across nodes.
      expect(holding.filter((keys) => keys.length > 0).length).toBeGreaterThanOrEqual(2);
      for (const keys of holding) {
        for (const k of keys.filter((k) => k.endsWith(':lease')))
          expect(keys).toContain(k.slice(0, -':lease'.length));
      }
    } finally {
      await caller.close();
    }
  });
});

describe('Redis Sentinel (redis-sentinel://)', () => {
  let sentinel: TestRedisSentinel;

  beforeAll(async () => {
    sentinel = await startRedisSentinel();
  }, 30_000);
  afterAll(async () => {
    await sentinel?.stop();
  });

  it('finds the master through the sentinel and runs every operation there', async () => {
    const { store, caller } = await storeFor(sentinel.url);
    try {
      const ids = await exerciseStore(store);
      const r = new Redis({ port: sentinel.master.port });
      expect(await r.exists(`sluice-topology:{${ids[0]}}`)).toBe(1);
      r.disconnect();
    } finally {
      await caller.close();
    }
  });
});

describe('Redis URLs', () => {
  it.each([
    ['http://127.0.0.1:6379', /not a redis/],
    ['redis-sentinel://127.0.0.1:26379', /names the master/],
  ])('%s is refused with a clear message', (url, message) => {
    expect(() => createRedisClient(url)).toThrow(message);
  });
});
