/**
 * 2× overload. The upstream serves at most 20 requests at a time, 20 ms each (~1,000/s; the rest
 * wait in its queue), so capacity is the upstream's, not this busy machine's CPU. A short ramp
 * (closed loop, 10 → 80 clients, 1.5 s each) finds the capacity through a gateway; then an open
 * loop (requests sent on a schedule, whatever the answers) drives twice that for 6 s:
 *  - through a gateway with no effective bound (the default --max-in-flight 10000): the excess
 *    queues, latency grows with the run (printed, not asserted: it is the contrast);
 *  - through a gateway with `--max-in-flight 40`: what is beyond the bound gets 503 with
 *    Retry-After at once, and what is admitted keeps a latency near the upstream's own.
 * Asserted on the bounded gateway: some shed, every 503 carries Retry-After, shed p50 under 50 ms
 * and p99 under 500 ms (generous: the open loop's own client shares the 2 cores; the figures
 * printed are far below), admitted p99 under 1 s,
 * nothing else failed. Printed: capacity, and p50/p99 of admitted and shed for both gateways.
 */
import { once } from 'node:events';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { Pool } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { percentile, startLoad } from '../helpers/load.ts';
import { type SluiceProcess, startSluice } from '../helpers/processes.ts';

const UPSTREAM_CONCURRENCY = 20;
const UPSTREAM_MS = 20;
const RAMP = [10, 20, 40, 80];
const RAMP_STEP_MS = 1_500;
const OVERLOAD_MS = 6_000;
const MAX_IN_FLIGHT = 40;

const yaml = (port: number) => `
apiVersion: sluice.dev/v1alpha1
kind: GatewayRoute
metadata: { name: api }
spec:
  service: { name: up, url: "http://127.0.0.1:${port}" }
  routes:
    - { name: api, paths: ["/api"] }
`;

interface Answer {
  status: number;
  ms: number;
  retryAfter: boolean;
}

/** Sends `rate` requests a second for `ms` on a schedule (not waiting for answers); every answer. */
async function openLoop(url: string, rate: number, ms: number): Promise<Answer[]> {
  const pool = new Pool(url, { connections: 1_024 });
  const answers: Promise<Answer>[] = [];
  const t0 = performance.now();
  let due = 0;
  for (let now = t0; now - t0 < ms; now = performance.now()) {
    for (; due < ((now - t0) / 1000) * rate; due++) {
      const start = performance.now();
      answers.push(
        pool
          .request({ path: `/api/${due}`, method: 'GET', headersTimeout: 30_000, bodyTimeout: 30_000 })
          .then(
            async (r) => {
              await r.body.dump();
              return {
                status: r.statusCode,
                ms: performance.now() - start,
                retryAfter: r.headers['retry-after'] !== undefined,
              };
            },
            () => ({ status: 0, ms: performance.now() - start, retryAfter: false }),
          ),
      );
    }
    await sleep(2);
  }
  const out = await Promise.all(answers);
  await pool.close();
  return out;
}

describe('2× overload against a slow-ish upstream', () => {
  const waiting: ServerResponse[] = [];
  let active = 0;
  const serve = (res: ServerResponse) => {
    active++;
    setTimeout(() => {
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
      active--;
      const next = waiting.shift();
      if (next !== undefined) serve(next);
    }, UPSTREAM_MS);
  };
  const upstream = createServer((req, res) => {
    req.resume();
    if (active < UPSTREAM_CONCURRENCY) serve(res);
    else waiting.push(res);
  });
  let open: SluiceProcess;
  let bounded: SluiceProcess;
  beforeAll(async () => {
    upstream.listen(0, '127.0.0.1');
    await once(upstream, 'listening');
    const port = (upstream.address() as AddressInfo).port;
    [open, bounded] = await Promise.all([
      startSluice({ yaml: yaml(port) }),
      startSluice({ yaml: yaml(port), args: ['--max-in-flight', String(MAX_IN_FLIGHT)] }),
    ]);
  });
  afterAll(async () => {
    await Promise.allSettled([open?.stop(), bounded?.stop()]);
    upstream.closeAllConnections();
    upstream.close();
  });

  it(`beyond --max-in-flight: 503 + Retry-After at once; admitted latency stays near the upstream's`, async () => {
    let capacity = 0;
    const ramp: string[] = [];
    for (const concurrency of RAMP) {
      const load = startLoad({ url: open.proxyUrl, concurrency, next: (i) => ({ path: `/api/${i}` }) });
      await sleep(RAMP_STEP_MS);
      await load.stop();
      const rate = load.done() / (RAMP_STEP_MS / 1000);
      ramp.push(`${concurrency}→${Math.round(rate)}/s`);
      capacity = Math.max(capacity, rate);
    }
    const rate = 2 * capacity;
    const figures = (answers: Answer[]) => {
      const ok = answers.filter((a) => a.status === 200).map((a) => a.ms);
      const shed = answers.filter((a) => a.status === 503).map((a) => a.ms);
      const f = (xs: number[]) =>
        xs.length ? `p50 ${percentile(xs, 50).toFixed(1)} / p99 ${percentile(xs, 99).toFixed(1)} ms` : '-';
      const other = answers.length - ok.length - shed.length;
      return {
        ok,
        shed,
        other,
        line: `${ok.length} admitted (${f(ok)}), ${shed.length} shed (${f(shed)}), ${other} other`,
      };
    };
    const unbounded = figures(await openLoop(open.proxyUrl, rate, OVERLOAD_MS));
    await sleep(1_000); // the upstream's queue empties
    const answers = await openLoop(bounded.proxyUrl, rate, OVERLOAD_MS);
    const b = figures(answers);
    console.log(
      `[overload] capacity ${Math.round(capacity)}/s (ramp ${ramp.join(', ')}; upstream ${UPSTREAM_CONCURRENCY} at a time, ${UPSTREAM_MS} ms each); ` +
        `${Math.round(rate)}/s for ${OVERLOAD_MS / 1000} s: no bound: ${unbounded.line}; ` +
        `--max-in-flight ${MAX_IN_FLIGHT}: ${b.line}, ${answers.filter((a) => a.status === 503 && a.retryAfter).length} of the 503s with Retry-After`,
    );
    expect(b.shed.length).toBeGreaterThan(answers.length / 10);
    expect(answers.filter((a) => a.status === 503 && !a.retryAfter)).toEqual([]);
    expect(percentile(b.shed, 50)).toBeLessThan(50);
    expect(percentile(b.shed, 99)).toBeLessThan(500);
    expect(percentile(b.ok, 99)).toBeLessThan(1_000);
    expect(b.other).toBe(0);
  }, 120_000);
});
