/**
 * rate-limiting with policy redis across three `sluice run` processes sharing one Redis:
 * 1,000 concurrent requests of one consumer (key-auth) against a limit of 100 admit exactly
 * 100, in each of 20 trials, and two consumers are counted apart. Then Redis stalls (SIGSTOP, a private
 * server): a failMode open route keeps admitting (counted locally), a failMode closed route
 * answers 503, and no request waits longer than the Redis timeout. With syncMs (counts synced every
 * interval, no Redis trip per request) the fleet admits at least the limit and a bounded excess,
 * counts every admitted request in Redis, and each replica refuses once it has synced; a data
 * plane stopped with SIGTERM sends its last counts before it exits.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { Pool, request } from 'undici';
import { afterAll, describe, expect, it } from 'vitest';
import { type SluiceProcess, startSluice, stopAllSluice } from '../helpers/processes.ts';
import { dropPrefix, sharedRedisUrl, startPrivateRedis, uniquePrefix } from '../helpers/redis.ts';
import { startUpstream } from '../helpers/servers.ts';

/** Consumers c0…c20, each with its own API key in one Secret. */
const CONSUMERS = Array.from({ length: 21 }, (_, i) => `c${i}`);
const apiKey = (consumer: string) => `key-of-${consumer}-0123456789`;

const yaml = (upstream: string) => `
apiVersion: v1
kind: Secret
metadata: { name: api-keys }
stringData:
${CONSUMERS.map((c) => `  ${c}: ${apiKey(c)}`).join('\n')}
---
apiVersion: sluice.dev/v1alpha1
kind: GatewayPlugin
metadata: { name: keys }
spec:
  plugin: key-auth
  keyAuth:
    consumers:
${CONSUMERS.map((c) => `      - { name: ${c}, secretKeyRef: { name: api-keys, key: ${c} } }`).join('\n')}
---
apiVersion: sluice.dev/v1alpha1
kind: GatewayPlugin
metadata: { name: exact }
spec: { plugin: rate-limiting, rateLimiting: { day: 100, policy: redis, limitBy: consumer } }
---
apiVersion: sluice.dev/v1alpha1
kind: GatewayPlugin
metadata: { name: open }
spec: { plugin: rate-limiting, rateLimiting: { day: 1000000, policy: redis, failMode: open } }
---
apiVersion: sluice.dev/v1alpha1
kind: GatewayPlugin
metadata: { name: closed }
spec: { plugin: rate-limiting, rateLimiting: { day: 1000000, policy: redis, failMode: closed } }
---
apiVersion: sluice.dev/v1alpha1
kind: GatewayPlugin
metadata: { name: synced }
spec: { plugin: rate-limiting, rateLimiting: { day: 100, policy: redis, syncMs: 50, limitBy: consumer } }
---
apiVersion: sluice.dev/v1alpha1
kind: GatewayPlugin
metadata: { name: slow-sync }
spec: { plugin: rate-limiting, rateLimiting: { day: 100, policy: redis, syncMs: 60000 } }
---
apiVersion: sluice.dev/v1alpha1
kind: GatewayRoute
metadata: { name: limited }
spec:
  service: { name: up, url: "${upstream}" }
  routes:
    - { name: exact, paths: ["/exact"], plugins: [{ name: keys }, { name: exact }] }
    - { name: open, paths: ["/open"], plugins: [{ name: open }] }
    - { name: closed, paths: ["/closed"], plugins: [{ name: closed }] }
    - { name: synced, paths: ["/synced"], plugins: [{ name: keys }, { name: synced }] }
    - { name: slow-sync, paths: ["/slow-sync"], plugins: [{ name: slow-sync }] }
`;

afterAll(() => stopAllSluice());

/**
 * Three `sluice run` replicas on the machine's Redis under a fresh prefix, a pool to each, and
 * `send(i, consumer, path)`: a GET with the consumer's key through replica i % 3, its response.
 */
async function threeReplicas(extraArgs: string[] = []) {
  const up = await startUpstream();
  const prefix = uniquePrefix('rl-e2e');
  const procs: SluiceProcess[] = [];
  const pools: Pool[] = [];
  for (let i = 0; i < 3; i++)
    procs.push(
      await startSluice({
        yaml: yaml(up.url),
        args: ['--redis', sharedRedisUrl, '--redis-prefix', prefix, ...extraArgs],
      }),
    );
  for (const p of procs) pools.push(new Pool(p.proxyUrl, { connections: 40 }));
  return {
    prefix,
    send: (i: number, consumer: string, path: string) =>
      pools[i % 3]
        .request({ path, method: 'GET', headers: { 'x-api-key': apiKey(consumer) } })
        .then(async (r) => {
          await r.body.dump();
          return r;
        }),
    async close() {
      await Promise.all(pools.map((p) => p.destroy()));
      await Promise.all(procs.map((p) => p.stop()));
      await up.close();
      await dropPrefix(sharedRedisUrl, prefix);
    },
  };
}

describe('rate limits across replicas', () => {
  it('1,000 concurrent requests, limit 100, three replicas: exactly 100 admitted, in 20 trials', async () => {
    const fleet = await threeReplicas();
    try {
      const send = (i: number, consumer: string) =>
        fleet.send(i, consumer, '/exact').then((r) => r.statusCode);
      const admitted: number[] = [];
      const t0 = performance.now();
      for (let trial = 0; trial < 20; trial++) {
        // A fresh consumer (its own count) per trial; the prefix is fresh per run.
        const consumer = CONSUMERS[trial];
        const statuses = await Promise.all(Array.from({ length: 1000 }, (_, i) => send(i, consumer)));
        admitted.push(statuses.filter((s) => s === 200).length);
        expect(statuses.filter((s) => s !== 200 && s !== 429)).toEqual([]);
      }
      console.log(
        `[rate-limiting-replicas] admitted per trial (one consumer, limit 100, 1000 requests, 3 replicas): ${admitted.join(' ')}; ` +
          `${Math.round(performance.now() - t0)} ms for 20,000 requests`,
      );
      expect(admitted).toEqual(Array(20).fill(100));
      // Two consumers are counted apart: c20 is admitted although c19 is spent.
      expect(await send(0, 'c19')).toBe(429);
      expect(await send(1, 'c20')).toBe(200);
    } finally {
      await fleet.close();
    }
  }, 90_000);

  it('syncMs 50, three replicas (hint 3): at least the limit, a bounded excess, every admission in Redis, then refused', async () => {
    const fleet = await threeReplicas(['--replicas-hint', '3']);
    const redis = new Redis(sharedRedisUrl);
    try {
      const send = (i: number, consumer: string) =>
        fleet.send(i, consumer, '/synced').then((r) => {
          if (r.statusCode === 429) retryAfter.add(String(r.headers['retry-after']));
          return r.statusCode;
        });
      // Refused on a replica's share, no window is full: Retry-After 1, never 0.
      const retryAfter = new Set<string>();
      const admitted: number[] = [];
      let probes = 0;
      for (let trial = 0; trial < 5; trial++) {
        const consumer = CONSUMERS[trial];
        const statuses = await Promise.all(Array.from({ length: 1000 }, (_, i) => send(i, consumer)));
        expect(statuses.filter((s) => s !== 200 && s !== 429)).toEqual([]);
        const n = statuses.filter((s) => s === 200).length;
        admitted.push(n);
        // Never fewer than the limit: a replica's count (the fleet's as of its last sync plus its own
        // since) is never above the fleet's true count, and each replica gets 333 requests, more
        // than its share (34) of the first interval. Beyond it: what the replicas' shares of the
        // room they last saw allow (without the shares, hint 1: 300, the limit on each replica).
        expect(n).toBeGreaterThanOrEqual(100);
        expect(n).toBeLessThanOrEqual(200);
        // After the burst, a replica whose last sync came before the others' last hits still has
        // room by what it knows: it may admit one more, which makes it sync; then it refuses.
        await sleep(300);
        const first = await Promise.all([0, 1, 2].map((i) => send(i, consumer)));
        expect(first.filter((s) => s !== 200 && s !== 429)).toEqual([]);
        probes += first.filter((s) => s === 200).length;
        await sleep(300);
        for (let i = 0; i < 3; i++) expect(await send(i, consumer)).toBe(429);
      }
      const total = (
        await Promise.all((await redis.keys(`${fleet.prefix}rls:*`)).map((k) => redis.get(k)))
      ).reduce((a, v) => a + Number(v), 0);
      expect([...retryAfter].every((v) => Number(v) >= 1)).toBe(true);
      // Every admitted request was added to Redis; refused ones were not.
      expect(total).toBe(admitted.reduce((a, n) => a + n, 0) + probes);
      console.log(
        `[rate-limiting-replicas] syncMs 50, hint 3: admitted per trial (limit 100, 1000 concurrent requests, 3 replicas): ${admitted.join(' ')}; then ${probes} of 15 probes admitted`,
      );
    } finally {
      redis.disconnect();
      await fleet.close();
    }
  }, 90_000);

  it('syncMs: a data plane stopped (SIGTERM) sends its hits not synced yet before it exits', async () => {
    const up = await startUpstream();
    const prefix = uniquePrefix('rl-e2e-drain');
    const redis = new Redis(sharedRedisUrl);
    try {
      const sluice = await startSluice({
        yaml: yaml(up.url),
        args: ['--redis', sharedRedisUrl, '--redis-prefix', prefix],
      });
      for (let i = 0; i < 7; i++) {
        const r = await request(`${sluice.proxyUrl}/slow-sync`);
        await r.body.dump();
        expect(r.statusCode).toBe(200);
      }
      // A minute's interval: nothing has been sent yet.
      expect(await redis.keys(`${prefix}rls:*`)).toEqual([]);
      await sluice.stop();
      const keys = await redis.keys(`${prefix}rls:*`);
      expect(keys).toHaveLength(1);
      expect(await redis.get(keys[0])).toBe('7');
    } finally {
      redis.disconnect();
      await up.close();
      await dropPrefix(sharedRedisUrl, prefix);
    }
  }, 30_000);

  it('Redis stalled: failMode open keeps admitting, failMode closed answers 503, never slower than the timeout', async () => {
    const up = await startUpstream();
    const redis = await startPrivateRedis();
    const sluice = await startSluice({
      yaml: yaml(up.url),
      args: ['--redis', redis.url, '--redis-timeout-ms', '200', '--replicas-hint', '2'],
    });
    const pool = new Pool(sluice.proxyUrl, { connections: 8 });
    const get = async (path: string) => {
      const start = performance.now();
      const r = await pool.request({ path, method: 'GET' });
      const body = await r.body.text();
      return { status: r.statusCode, ms: performance.now() - start, body };
    };
    try {
      expect((await get('/open')).status).toBe(200);
      expect((await get('/closed')).status).toBe(200);
      redis.pause();
      const stalled = [];
      for (let i = 0; i < 5; i++) stalled.push(await get('/open'), await get('/closed'));
      const open = stalled.filter((_, i) => i % 2 === 0);
      const closed = stalled.filter((_, i) => i % 2 === 1);
      expect(open.map((a) => a.status)).toEqual([200, 200, 200, 200, 200]);
      expect(closed.map((a) => a.status)).toEqual([503, 503, 503, 503, 503]);
      expect(JSON.parse(closed[0].body).code).toBe('SLC_ERR_RATE_LIMIT_UNAVAILABLE');
      const slowest = Math.max(...stalled.map((a) => a.ms));
      console.log(
        `[rate-limiting-replicas] Redis stalled: slowest decision ${Math.round(slowest)} ms (timeout 200 ms)`,
      );
      expect(slowest).toBeLessThan(1_000);
      const metrics = await (await fetch(`${sluice.adminUrl}/metrics`)).text();
      expect(metrics).toMatch(
        /sluice_rate_limit_requests_total\{route="route\/default\/limited\/open\/0",result="fallback"\} 5/,
      );
      redis.resume();
      const deadline = Date.now() + 5_000;
      let back = 0;
      while (back !== 200 && Date.now() < deadline) back = (await get('/closed')).status;
      expect(back).toBe(200);
    } finally {
      await pool.destroy();
      await sluice.stop();
      await redis.stop();
      await up.close();
    }
  }, 30_000);
});
