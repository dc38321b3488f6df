/**
 * A soak: one gateway under steady load for SOAK_SECONDS (default 900, `make reliability`'s 15
 * minutes), 32 clients in a closed loop over a mix of routes, in-memory stores as a single
 * process runs them:
 *  - GET /api/…      plain proxy;
 *  - POST /charges   idempotency, a new key each time, records kept the default 24 h: the store
 *                    stays within its bound (memory-idempotency-store.ts, 64 MiB) by evicting the
 *                    oldest, which sluice_store_evictions_total shows (asserted once the keys made
 *                    are well past what the bound holds);
 *  - GET /limited/…  a local rate limit per x-bucket header (100 buckets, a limit never reached);
 *  - GET /cache/…    proxy-cache (memory), 2,000 ids the upstream marks cacheable for 5 s.
 * The gateway's RSS is sampled every 10 s. Asserted: 0 failed requests, and the RSS floor grows
 * less than 20 % over the second half of the run (the first half is warm-up: at this rate V8's
 * heap takes minutes to reach the size it keeps). The floor (the lowest sample of a quarter of
 * the run) is what remains after the collector's passes; the samples in between are a sawtooth
 * (at 900 s, peaks up to ~1.1 GiB before a major collection), so a median or the last sample
 * would measure where the saw happened to be. Third quarter's floor against the fourth's.
 * Printed: requests and rate, RSS at start, the two floors, the maximum, every sample.
 */
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { failures, type Shot, startLoad, statusLine } from '../helpers/load.ts';
import { readMetric, rssBytes, type SluiceProcess, startSluice } from '../helpers/processes.ts';

const SOAK_SECONDS = Number(process.env.SOAK_SECONDS ?? 900);
const SAMPLE_MS = 10_000;
/** At least a minute: V8's heap and the idempotency store (filled to its bound) reach their size. */
const WARM_UP_MS = Math.max(60_000, (SOAK_SECONDS * 1000) / 2);
/** What the memory idempotency store holds of this test's records: ~1.3 kB each in 64 MiB. */
const RECORDS_HELD = (64 * 2 ** 20) / 1_300;
const CONCURRENCY = 32;
/** charts/sluice/values.yaml: dataplane.resources.limits.memory 512Mi × heapPercent 75. */
const LIMIT_MIB = 512;
const HEAP_MIB = (LIMIT_MIB * 75) / 100;

const yaml = (port: number) => `
apiVersion: sluice.dev/v1alpha1
kind: GatewayPlugin
metadata: { name: idem }
spec: { plugin: idempotency, config: {} }
---
apiVersion: sluice.dev/v1alpha1
kind: GatewayPlugin
metadata: { name: limit }
spec: { plugin: rate-limiting, config: { second: 1000000, limitBy: header, header: x-bucket } }
---
apiVersion: sluice.dev/v1alpha1
kind: GatewayPlugin
metadata: { name: cache }
spec: { plugin: proxy-cache, config: { store: memory } }
---
apiVersion: sluice.dev/v1alpha1
kind: GatewayRoute
metadata: { name: soak }
spec:
  service: { name: up, url: "http://127.0.0.1:${port}" }
  routes:
    - { name: api, paths: ["/api"] }
    - { name: charges, paths: ["/charges"], methods: [POST], plugins: [{ name: idem }] }
    - { name: limited, paths: ["/limited"], plugins: [{ name: limit }] }
    - { name: cache, paths: ["/cache"], plugins: [{ name: cache }] }
`;

const MiB = (b: number) => `${Math.round(b / 2 ** 20)} MiB`;

describe(`soak: ${SOAK_SECONDS} s of mixed load on one gateway`, () => {
  // Not helpers/servers.ts's startUpstream: it records every request, millions here.
  const upstream = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const body = JSON.stringify({ url: req.url });
      res.writeHead(200, {
        'content-type': 'application/json',
        ...(req.url?.startsWith('/cache') ? { 'cache-control': 'public, max-age=5' } : {}),
      });
      res.end(body);
    });
  });
  let gw: SluiceProcess;
  beforeAll(async () => {
    upstream.listen(0, '127.0.0.1');
    await once(upstream, 'listening');
    // With the Node flags the chart gives a data plane by default (NODE_OPTIONS: 512Mi limit ×
    // heapPercent 75, semi-space 16): the pod's memory limit is what RSS must stay under, not
    // whatever V8 takes on a 24 GiB machine (without them: peaks of ~1.1 GiB).
    gw = await startSluice({
      yaml: yaml((upstream.address() as AddressInfo).port),
      env: { NODE_OPTIONS: `--max-old-space-size=${HEAP_MIB} --max-semi-space-size=16` },
    });
  });
  afterAll(async () => {
    await gw?.stop();
    upstream.closeAllConnections();
    upstream.close();
  });

  it(
    "0 failed requests; the RSS floor grows less than 20 % over the second half; RSS within the chart's 512Mi; 24 h idempotency records evicted to stay within the store's bound",
    async () => {
      const pid = gw.process.pid;
      const samples: { at: number; rss: number }[] = [];
      const sample = () => samples.push({ at: performance.now() - t0, rss: rssBytes(pid) ?? Number.NaN });
      const t0 = performance.now();
      sample();
      const load = startLoad({
        url: gw.proxyUrl,
        concurrency: CONCURRENCY,
        timeoutMs: 10_000,
        next: (i): Shot => {
          switch (i % 4) {
            case 0:
              return { path: `/api/items/${i}`, kind: 'api' };
            case 1:
              return {
                path: '/charges',
                method: 'POST',
                headers: {
                  authorization: 'Bearer soak',
                  'content-type': 'application/json',
                  'idempotency-key': `soak-${i.toString(36).padStart(32, '0')}`,
                },
                body: '{"amount":1}',
                kind: 'idem',
              };
            case 2:
              return { path: `/limited/${i}`, headers: { 'x-bucket': `b${i % 100}` }, kind: 'limit' };
            default:
              return { path: `/cache/${i % 2_000}`, kind: 'cache' };
          }
        },
      });
      const timer = setInterval(sample, SAMPLE_MS);
      try {
        await sleep(SOAK_SECONDS * 1000);
      } finally {
        clearInterval(timer);
        await load.stop();
      }
      sample();
      const ms = performance.now() - t0;
      const keyed = Math.floor(load.done() / 4);
      const evicted = await readMetric(gw.adminUrl, 'sluice_store_evictions_total', { store: 'idempotency' });
      const third = samples.filter((s) => s.at >= WARM_UP_MS && s.at < (WARM_UP_MS + ms) / 2);
      const fourth = samples.filter((s) => s.at >= (WARM_UP_MS + ms) / 2);
      const floor = (xs: typeof samples) => Math.min(...xs.map((s) => s.rss));
      const growth = (floor(fourth) - floor(third)) / floor(third);
      const max = Math.max(...samples.map((s) => s.rss));
      console.log(
        `[soak] ${SOAK_SECONDS} s, ${load.done()} requests (${Math.round(load.done() / (ms / 1000))}/s, ${CONCURRENCY} clients, ` +
          `proxy/idempotency/rate limit/cache 1:1:1:1); statuses ${statusLine(load.byStatus)}; failed ${failures(load.byStatus)}` +
          `${load.errors.size ? ` (${JSON.stringify(Object.fromEntries(load.errors))})` : ''}; ` +
          `RSS start ${MiB(samples[0].rss)}, floor of the third quarter ${MiB(floor(third))}, of the fourth ${MiB(floor(fourth))} ` +
          `(${growth >= 0 ? '+' : ''}${(growth * 100).toFixed(1)} %), max ${MiB(max)}; ` +
          `idempotency records made ${keyed}, evicted ${evicted}; ` +
          `samples (MiB, every ${SAMPLE_MS / 1000} s): ${samples.map((s) => Math.round(s.rss / 2 ** 20)).join(' ')}`,
      );
      expect(failures(load.byStatus)).toBe(0);
      expect(third.length).toBeGreaterThanOrEqual(2);
      expect(fourth.length).toBeGreaterThanOrEqual(2);
      expect(growth).toBeLessThan(0.2);
      expect(max, "peak RSS against the chart's memory limit").toBeLessThan(LIMIT_MIB * 2 ** 20);
      // Kept within the bound by evicting, once there were more than it holds (none expire in 24 h).
      if (keyed > 2 * RECORDS_HELD) expect(evicted).toBeGreaterThan(keyed - 2 * RECORDS_HELD);
    },
    (SOAK_SECONDS + 120) * 1000,
  );
});
