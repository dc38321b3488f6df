/**
 * proxy-cache with store redis across `sluice run` processes sharing one Redis:
 *  - a second replica serves what the first stored;
 *  - 100 concurrent misses on each of two replicas make one upstream call (per process by the
 *    in-flight wait, across them by the single-key Redis lock);
 *  - a purge on one replica's admin port empties the shared store;
 *  - Redis down: every request is served from the upstream (fwd=bypass), counted, never a 5xx.
 */
import { Redis } from 'ioredis';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CacheUpstream, startCacheUpstream } from '../helpers/cache-upstream.ts';
import { fetchMetrics, metricValue, type SluiceProcess, startSluice } from '../helpers/processes.ts';
import {
  dropPrefix,
  type PrivateRedis,
  sharedRedisUrl,
  startPrivateRedis,
  uniquePrefix,
} from '../helpers/redis.ts';
import { until } from '../helpers/until.ts';

const yaml = (upstreamPort: number) => `
apiVersion: sluice.dev/v1alpha1
kind: GatewayPlugin
metadata: { name: cache, namespace: default }
spec:
  plugin: proxy-cache
  proxyCache: { store: redis }
---
apiVersion: sluice.dev/v1alpha1
kind: GatewayRoute
metadata: { name: items, namespace: default }
spec:
  service: { name: items, url: "http://127.0.0.1:${upstreamPort}" }
  plugins: [{ name: cache }]
  routes:
    - { name: all, paths: ["/c"] }
`;

// Replicas behind one Service see one Host (the key has it); here each listens on its own port.
const get = async (base: string, path: string) => {
  const r = await request(`${base}${path}`, { headers: { host: 'api.example.test' } });
  return { status: r.statusCode, headers: r.headers as Record<string, string>, body: await r.body.text() };
};

describe('proxy-cache: two replicas sharing Redis', () => {
  const prefix = uniquePrefix('cache-replicas');
  let up: CacheUpstream;
  let a: SluiceProcess;
  let b: SluiceProcess;

  beforeAll(async () => {
    up = await startCacheUpstream();
    const args = ['--redis', sharedRedisUrl, '--redis-prefix', prefix];
    [a, b] = await Promise.all([
      startSluice({ yaml: yaml(up.port), args }),
      startSluice({ yaml: yaml(up.port), args }),
    ]);
  });
  /** The cache entries under this test's prefix (cache-redis-store.ts: `<prefix>cache:e:…`). */
  const entryKeys = async () => {
    const r = new Redis(sharedRedisUrl);
    try {
      return await r.keys(`${prefix}cache:e:*`);
    } finally {
      r.disconnect();
    }
  };
  afterAll(async () => {
    await Promise.allSettled([a?.stop(), b?.stop()]);
    await up?.close();
    await dropPrefix(sharedRedisUrl, prefix);
  });

  it('the second replica serves the response the first stored', async () => {
    const first = await get(a.proxyUrl, '/c/fresh');
    expect(first.headers['cache-status']).toBe('sluice; fwd=miss; stored');
    // The entry is written as the response ends, not before the client has it: asked at once
    // on a loaded machine, the second replica could still miss (a second upstream call).
    await until(async () => (await entryKeys()).length === 1);
    const second = await get(b.proxyUrl, '/c/fresh');
    expect(second.headers['cache-status']).toMatch(/^sluice; hit; ttl=\d+$/);
    expect(second.body).toBe(first.body);
    expect(second.headers.age).toBeDefined();
    expect(up.calls('/fresh')).toBe(1);
  });

  it('100 concurrent misses on each replica: one upstream call', async () => {
    const all = await Promise.all(
      Array.from({ length: 200 }, (_, i) => get(i % 2 ? a.proxyUrl : b.proxyUrl, '/c/slow')),
    );
    expect(all.every((r) => r.status === 200)).toBe(true);
    expect(new Set(all.map((r) => r.body)).size).toBe(1);
    expect(up.calls('/slow')).toBe(1);
  });

  it('concurrent requests for an uncacheable response are not held: each replica forwards once the lock is free', async () => {
    const t0 = performance.now();
    const all = await Promise.all(
      Array.from({ length: 20 }, (_, i) => get(i % 2 ? a.proxyUrl : b.proxyUrl, '/c/slowprivate')),
    );
    expect(all.every((r) => r.status === 200)).toBe(true);
    expect(all.every((r) => r.headers['cache-status'] === 'sluice; fwd=miss; detail=uncacheable')).toBe(true);
    expect(up.calls('/slowprivate')).toBe(20);
    // Without the lock being retried, the other replica's requests would poll for lock.wait (5 s).
    expect(performance.now() - t0).toBeLessThan(3_000);
  });

  it('a purge on one admin port empties the shared store for every replica', async () => {
    await get(a.proxyUrl, '/c/fresh?purge=1');
    // The entry is written to Redis as the response ends, not before the client has it: wait (at
    // most 2 s) until the other replica finds it.
    let seen = '';
    for (let i = 0; i < 80 && !/hit/.test(seen); i++) {
      if (i > 0) await new Promise((w) => setTimeout(w, 25));
      seen = (await get(b.proxyUrl, '/c/fresh?purge=1')).headers['cache-status'];
    }
    expect(seen).toMatch(/hit/);
    const r = await request(`${a.adminUrl}/cache?prefix=/c/fresh`, {
      method: 'DELETE',
      headers: { authorization: 'Bearer t' },
    });
    expect(r.statusCode).toBe(200);
    expect(((await r.body.json()) as { purged: number }).purged).toBeGreaterThanOrEqual(2);
    expect((await get(b.proxyUrl, '/c/fresh?purge=1')).headers['cache-status']).toBe(
      'sluice; fwd=miss; stored',
    );
  });
});

describe('proxy-cache: Redis down', () => {
  let redis: PrivateRedis;
  let up: CacheUpstream;
  let gw: SluiceProcess;

  beforeAll(async () => {
    redis = await startPrivateRedis();
    up = await startCacheUpstream();
    gw = await startSluice({
      yaml: yaml(up.port),
      args: ['--redis', redis.url, '--redis-timeout-ms', '300'],
    });
  });
  afterAll(async () => {
    await gw?.stop();
    await up?.close();
    await redis?.stop();
  });

  it('requests go to the upstream (fwd=bypass), counted; never an error because of the cache', async () => {
    await get(gw.proxyUrl, '/c/fresh');
    expect((await get(gw.proxyUrl, '/c/fresh')).headers['cache-status']).toMatch(/hit/);
    await redis.stop();
    for (let i = 0; i < 5; i++) {
      const r = await get(gw.proxyUrl, '/c/fresh');
      expect(r.status).toBe(200);
      expect(r.headers['cache-status']).toBe('sluice; fwd=bypass; detail=store-unavailable');
    }
    expect(up.calls('/fresh')).toBe(6);
    const metrics = await fetchMetrics(gw.adminUrl);
    expect(metricValue(metrics, 'sluice_cache_requests_total', { result: 'bypass' })).toBe(5);
  });

  it('a paused Redis (SIGSTOP) costs at most the deadline, then the upstream answers', async () => {
    const paused = await startPrivateRedis();
    const gw2 = await startSluice({
      yaml: yaml(up.port),
      args: ['--redis', paused.url, '--redis-timeout-ms', '300'],
    });
    try {
      paused.pause();
      const t0 = performance.now();
      const r = await get(gw2.proxyUrl, '/c/fresh?paused=1');
      expect(r.status).toBe(200);
      expect(r.headers['cache-status']).toBe('sluice; fwd=bypass; detail=store-unavailable');
      expect(performance.now() - t0).toBeLessThan(2_000);
    } finally {
      await gw2.stop();
      await paused.stop();
    }
  });
});
