/**
 * Shared state on one Redis topology, through three `sluice run` gateways (the same tests run on
 * a Redis Cluster, redis-cluster.test.ts, and on one Redis, redis-standalone.test.ts):
 *  - 30 rate-limit buckets of L=100, 150 requests each, all sent at once over the three gateways
 *    (60 in flight): exactly 100 admitted per bucket, the rest 429, never a 503;
 *  - beside that load, 300 idempotency keys sent 3 times each at once: no 503, exactly one
 *    execution per key;
 *  - the same buckets with the rate limit synced (syncMs): at least L admitted per bucket, every
 *    sync answered by the bucket's slot, and once the gateways have synced, each refuses every bucket;
 *  - proxy-cache on a key-auth route: a caller's private entry and the shared one are found from
 *    another gateway (one lookup of both keys), a POST invalidates the caller's entries, and an
 *    admin purge says how many entries it removed.
 */
import { request } from 'undici';
import { Pool } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CacheUpstream, startCacheUpstream } from '../helpers/cache-upstream.ts';
import { fetchMetrics, metricValue, type SluiceProcess, startSluice } from '../helpers/processes.ts';
import { uniquePrefix } from '../helpers/redis.ts';
import { startUpstream, type Upstream } from '../helpers/servers.ts';

const BUCKETS = 30;
const LIMIT = 100;
const PER_BUCKET = 150;
const IN_FLIGHT = 60;
const KEYS = 300;
const COPIES = 3;

const yaml = (plain: number, cache: number) => `
apiVersion: v1
kind: Secret
metadata: { name: api-keys }
stringData: { alice: alice-key-0123456789, bob: bob-key-0123456789 }
---
apiVersion: sluice.dev/v1alpha1
kind: GatewayPlugin
metadata: { name: keys }
spec:
  plugin: key-auth
  config:
    consumers:
      - { name: alice, secretKeyRef: { name: api-keys, key: alice } }
      - { name: bob, secretKeyRef: { name: api-keys, key: bob } }
---
apiVersion: sluice.dev/v1alpha1
kind: GatewayPlugin
metadata: { name: exact }
spec: { plugin: rate-limiting, config: { day: ${LIMIT}, policy: redis, limitBy: header, header: x-bucket, failMode: closed } }
---
apiVersion: sluice.dev/v1alpha1
kind: GatewayPlugin
metadata: { name: synced }
spec: { plugin: rate-limiting, rateLimiting: { day: ${LIMIT}, policy: redis, syncMs: 50, limitBy: header, header: x-bucket, failMode: closed } }
---
apiVersion: sluice.dev/v1alpha1
kind: GatewayPlugin
metadata: { name: idem }
spec: { plugin: idempotency, config: { lease: 5s, ttl: 1h } }
---
apiVersion: sluice.dev/v1alpha1
kind: GatewayPlugin
metadata: { name: cache }
spec: { plugin: proxy-cache, config: { store: redis } }
---
apiVersion: sluice.dev/v1alpha1
kind: GatewayRoute
metadata: { name: shared }
spec:
  service: { name: plain, url: "http://127.0.0.1:${plain}" }
  routes:
    - { name: limited, paths: ["/limited"], plugins: [{ name: exact }] }
    - { name: synced, paths: ["/synced"], plugins: [{ name: synced }] }
    - { name: charges, paths: ["/charges"], methods: [POST], plugins: [{ name: idem }] }
---
apiVersion: sluice.dev/v1alpha1
kind: GatewayRoute
metadata: { name: cached }
spec:
  service: { name: cached, url: "http://127.0.0.1:${cache}" }
  plugins: [{ name: keys }, { name: cache }]
  routes:
    - { name: all, paths: ["/c"] }
`;

/** Runs `work(i)` for i in [0, n) with at most `limit` at a time. */
async function bounded(n: number, limit: number, work: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < n) await work(next++);
  };
  await Promise.all(Array.from({ length: Math.min(limit, n) }, worker));
}

const countOf = <T>(xs: T[]) => {
  const m = new Map<T, number>();
  for (const x of xs) m.set(x, (m.get(x) ?? 0) + 1);
  return m;
};

/** `redisUrl` is read when the suite starts (the topology is started by the file's beforeAll). */
export function sharedStateSuite(topology: string, redisUrl: () => string): void {
  describe(`shared state on ${topology}, three gateways`, () => {
    const prefix = uniquePrefix('shared-state');
    let plain: Upstream;
    let cache: CacheUpstream;
    const gateways: SluiceProcess[] = [];
    const pools: Pool[] = [];

    beforeAll(async () => {
      plain = await startUpstream();
      cache = await startCacheUpstream();
      // A Redis deadline of 3 s, not 1 s: on a loaded test machine (2 cores, other suites) a
      // missed deadline is the machine, not the slot routing these tests are about.
      const args = ['--redis', redisUrl(), '--redis-prefix', prefix, '--redis-timeout-ms', '3000'];
      gateways.push(
        ...(await Promise.all(
          [0, 1, 2].map(() =>
            startSluice({ yaml: yaml(plain.port, cache.port), args, readyTimeoutMs: 60_000 }),
          ),
        )),
      );
      for (const g of gateways) pools.push(new Pool(g.proxyUrl, { connections: IN_FLIGHT }));
    }, 90_000);
    afterAll(async () => {
      await Promise.allSettled(pools.map((p) => p.destroy()));
      await Promise.allSettled(gateways.map((g) => g.stop()));
      await plain?.close();
      await cache?.close();
    });

    it(`${BUCKETS} buckets × L=${LIMIT} at once: exactly ${LIMIT} each; idempotency beside: no 503, one execution per key`, async () => {
      const limited: { bucket: number; status: number }[] = [];
      const rateLoad = bounded(BUCKETS * PER_BUCKET, IN_FLIGHT, async (i) => {
        // Interleaved: the buckets are all in flight together, each spread over the gateways.
        const bucket = i % BUCKETS;
        const r = await pools[i % 3].request({
          path: '/limited',
          method: 'GET',
          headers: { 'x-bucket': `${prefix}b${bucket}` },
        });
        await r.body.dump();
        limited.push({ bucket, status: r.statusCode });
      });
      const idem: { key: number; status: number }[] = [];
      const idemLoad = bounded(KEYS * COPIES, 30, async (i) => {
        const key = i % KEYS;
        const r = await pools[(i + 1) % 3].request({
          path: '/charges',
          method: 'POST',
          headers: {
            authorization: 'Bearer shared-state',
            'idempotency-key': `${prefix}k${key}`,
            'content-type': 'application/json',
          },
          body: JSON.stringify({ amount: key }),
        });
        await r.body.dump();
        idem.push({ key, status: r.statusCode });
      });
      const t0 = performance.now();
      await Promise.all([rateLoad, idemLoad]);
      const ms = Math.round(performance.now() - t0);

      const admitted = Array.from(
        { length: BUCKETS },
        (_, b) => limited.filter((a) => a.bucket === b && a.status === 200).length,
      );
      const statuses = countOf(limited.map((a) => a.status));
      const idemStatuses = countOf(idem.map((a) => a.status));
      const executions = countOf(
        plain.seen.filter((s) => s.url === '/charges').map((s) => String(s.headers['idempotency-key'])),
      );
      console.log(
        `[shared-state ${topology}] ${BUCKETS * PER_BUCKET} rate-limited + ${KEYS * COPIES} idempotent requests in ${ms} ms; ` +
          `admitted per bucket: min ${Math.min(...admitted)} max ${Math.max(...admitted)}; ` +
          `rate-limit statuses ${JSON.stringify(Object.fromEntries(statuses))}; idempotency statuses ${JSON.stringify(Object.fromEntries(idemStatuses))}; ` +
          `executions ${executions.size} keys, max ${Math.max(...executions.values())} per key`,
      );
      // The gateways' own account of their stores (what a failure here needs first).
      for (const [i, g] of gateways.entries()) {
        const lines = `${g.stdout()}\n${g.stderr()}`.split('\n').filter((l) => /redis|store/i.test(l));
        if (lines.length > 0) console.log(`gateway ${i}:\n${lines.slice(-10).join('\n')}`);
      }
      expect([...statuses.keys()].sort()).toEqual([200, 429]);
      expect(admitted).toEqual(Array(BUCKETS).fill(LIMIT));
      expect(idemStatuses.get(503) ?? 0).toBe(0);
      expect([...idemStatuses.keys()].every((s) => s === 200 || s === 409)).toBe(true);
      expect(executions.size).toBe(KEYS);
      expect([...executions.values()].every((n) => n === 1)).toBe(true);
      // Every decision came from Redis: no fallback, no store error.
      for (const g of gateways) {
        const m = await fetchMetrics(g.adminUrl);
        expect(metricValue(m, 'sluice_rate_limit_requests_total', { result: 'unavailable' })).toBe(0);
        expect(metricValue(m, 'sluice_idempotency_requests_total', { outcome: 'store_error' })).toBe(0);
      }
      // What the gateways logged (Redis errors, store failures): once per change of state.
      for (const g of gateways)
        if (g.stderr().trim()) console.log(g.stderr().trim().split('\n').slice(-20).join('\n'));
    }, 120_000);

    it(`${BUCKETS} buckets × L=${LIMIT} synced every 50 ms: at least ${LIMIT} each, every sync answered, then refused everywhere`, async () => {
      const send = async (g: number, bucket: number) => {
        const r = await pools[g].request({
          path: '/synced',
          method: 'GET',
          headers: { 'x-bucket': `${prefix}s${bucket}` },
        });
        await r.body.dump();
        return r.statusCode;
      };
      const limited: { bucket: number; status: number }[] = [];
      await bounded(BUCKETS * PER_BUCKET, IN_FLIGHT, async (i) => {
        const bucket = i % BUCKETS;
        limited.push({ bucket, status: await send(i % 3, bucket) });
      });
      const admitted = Array.from(
        { length: BUCKETS },
        (_, b) => limited.filter((a) => a.bucket === b && a.status === 200).length,
      );
      console.log(
        `[shared-state ${topology}] synced: admitted per bucket (L=${LIMIT}, ${PER_BUCKET} requests over 3 gateways): ` +
          `min ${Math.min(...admitted)} max ${Math.max(...admitted)}`,
      );
      // 503 would be a failed sync (failMode closed).
      expect([...countOf(limited.map((a) => a.status)).keys()].sort()).toEqual([200, 429]);
      for (const n of admitted) expect(n).toBeGreaterThanOrEqual(LIMIT);
      // Once synced, a gateway whose last sync came before the others' last hits may admit one
      // more (which makes it sync); then every gateway refuses every bucket.
      await new Promise((r) => setTimeout(r, 300));
      for (let b = 0; b < BUCKETS; b++) for (const g of [0, 1, 2]) await send(g, b);
      await new Promise((r) => setTimeout(r, 300));
      const after = [];
      for (let b = 0; b < BUCKETS; b++) for (const g of [0, 1, 2]) after.push(await send(g, b));
      expect(after).toEqual(Array(BUCKETS * 3).fill(429));
      for (const g of gateways) {
        const m = await fetchMetrics(g.adminUrl);
        expect(
          metricValue(m, 'sluice_store_operation_seconds_count', { op: 'rate_limit_sync', result: 'ok' }),
        ).toBeGreaterThan(0);
        expect(
          metricValue(m, 'sluice_store_operation_seconds_count', { op: 'rate_limit_sync', result: 'error' }),
        ).toBe(0);
      }
    }, 60_000);

    it('proxy-cache on a key-auth route: hits across gateways, invalidation, purge with a count', async () => {
      const get = async (g: number, path: string, key: string, method = 'GET') => {
        const r = await request(`${gateways[g].proxyUrl}${path}`, {
          method,
          headers: { host: 'api.example.test', 'x-api-key': key },
        });
        await r.body.dump();
        return { status: r.statusCode, cache: String(r.headers['cache-status']) };
      };
      // An entry is written once its response has been sent: wait until gateway g has written n.
      const written = async (g: number, n: number) => {
        for (let i = 0; i < 200; i++) {
          const m = await fetchMetrics(gateways[g].adminUrl);
          const sets = metricValue(m, 'sluice_store_operation_seconds_count', {
            op: 'cache_set',
            result: 'ok',
          });
          if (sets >= n) return;
          await new Promise((r) => setTimeout(r, 10));
        }
        throw new Error(`gateway ${g} did not write ${n} cache entries`);
      };
      const deleted = async (g: number, n: number) => {
        for (let i = 0; i < 200; i++) {
          const m = await fetchMetrics(gateways[g].adminUrl);
          if (
            metricValue(m, 'sluice_store_operation_seconds_count', { op: 'cache_delete', result: 'ok' }) >= n
          )
            return;
          await new Promise((r) => setTimeout(r, 10));
        }
        throw new Error(`gateway ${g} did not invalidate`);
      };
      const alice = 'alice-key-0123456789';
      const bob = 'bob-key-0123456789';
      // A response to alice (not marked public): stored under her key, found by her on another
      // gateway, not by bob.
      expect((await get(0, '/c/fresh', alice)).cache).toBe('sluice; fwd=miss; stored');
      await written(0, 1);
      expect((await get(1, '/c/fresh', alice)).cache).toMatch(/^sluice; hit/);
      expect((await get(2, '/c/fresh', bob)).cache).toBe('sluice; fwd=miss; stored');
      await written(2, 1);
      // A public response: stored once, shared by every caller.
      expect((await get(1, '/c/public', alice)).cache).toBe('sluice; fwd=miss; stored');
      await written(1, 1);
      expect((await get(2, '/c/public', bob)).cache).toMatch(/^sluice; hit/);
      expect(cache.calls('/public')).toBe(1);
      // A successful POST invalidates what the request's keys name: alice's entry and the shared one.
      expect((await get(0, '/c/fresh', alice, 'POST')).status).toBe(200);
      await deleted(0, 1);
      expect((await get(1, '/c/fresh', alice)).cache).toBe('sluice; fwd=miss; stored');
      await written(1, 2);
      expect((await get(2, '/c/fresh', bob)).cache).toMatch(/^sluice; hit/);
      // The purge removes alice's and bob's /c/fresh and the shared /c/public: 3 entries.
      const r = await request(`${gateways[2].adminUrl}/cache?prefix=/c/`, {
        method: 'DELETE',
        headers: { authorization: 'Bearer t' },
      });
      expect(r.statusCode).toBe(200);
      expect(await r.body.json()).toEqual({ purged: 3, prefix: '/c/' });
      expect((await get(0, '/c/fresh', alice)).cache).toBe('sluice; fwd=miss; stored');
      expect((await get(0, '/c/public', bob)).cache).toBe('sluice; fwd=miss; stored');
    });
  });
}
