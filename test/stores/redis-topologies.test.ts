/**
 * The Redis store on the topologies a deployment uses, started here as real servers on free
 * loopback ports: a three-master Redis Cluster (redis-cluster:// URL) and a master watched by
 * a Sentinel (redis-sentinel:// URL). Records must spread over the cluster's slots, and every
 * script must run in one slot (the hash tag keeps a record and its lease together).
 */
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { IdempotencyStore } from '../../dataplane/stores/idempotency-store.ts';
import { RedisCaller, createRedisClient } from '../../dataplane/stores/redis-connection.ts';
import {
  RedisIdempotencyStore,
  defineIdempotencyScripts,
} from '../../dataplane/stores/redis-idempotency-store.ts';
import { startPrivateRedis, type PrivateRedis } from '../helpers/redis.ts';
import { startRedisSentinel, type TestRedisSentinel } from '../helpers/redis-sentinel.ts';
import { freePort } from '../helpers/servers.ts';

const exec = promisify(execFile);

async function storeFor(url: string): Promise<{ store: IdempotencyStore; caller: RedisCaller<unknown> }> {
  const client = createRedisClient(url);
  defineIdempotencyScripts(client);
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
  const dir = mkdtempSync(join(tmpdir(), 'sluice-cluster-'));
  const nodes: PrivateRedis[] = [];

  beforeAll(async () => {
    for (let i = 0; i < 3; i++) {
      const port = await freePort();
      nodes.push(
        await startPrivateRedis([
          '--cluster-enabled',
          'yes',
          '--cluster-config-file',
          `nodes-${port}.conf`,
          '--cluster-node-timeout',
          '2000',
          '--dir',
          dir,
        ]),
      );
    }
    await exec('redis-cli', [
      '--cluster',
      'create',
      ...nodes.map((n) => `127.0.0.1:${n.port}`),
      '--cluster-replicas',
      '0',
      '--cluster-yes',
    ]);
    // The cluster is usable once every node agrees on the slots.
    for (let i = 0; ; i++) {
      const states = await Promise.all(
        nodes.map((n) => exec('redis-cli', ['-p', String(n.port), 'cluster', 'info']).then((r) => r.stdout)),
      );
      if (states.every((s) => s.includes('cluster_state:ok'))) break;
      if (i > 100) throw new Error('the cluster did not become ok');
      await sleep(100);
    }
  }, 60_000);
  afterAll(async () => {
    await Promise.all(nodes.map((n) => n.stop()));
    rmSync(dir, { recursive: true, force: true });
  });

  it('claims, renews, completes and replays across the cluster; records spread over the masters', async () => {
    const { store, caller } = await storeFor(
      `redis-cluster://127.0.0.1:${nodes[0].port},127.0.0.1:${nodes[1].port}`,
    );
    try {
      await exerciseStore(store);
      const holding = await Promise.all(
        nodes.map(async (n) => {
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
