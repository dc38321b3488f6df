/**
 * --adaptive-concurrency wired into a real data plane: an upstream that answers at once, then
 * turns slow (requests queue behind it), makes the adaptive limit fall below the concurrency
 * the clients keep up, and the excess is shed (503 SLC_ERR_OVERLOADED, Retry-After), counted
 * with reason "adaptive", while the fixed bound (10,000) is nowhere near.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { DataPlane } from '../../dataplane/main.ts';
import { startTestDataPlane, startUpstream, type Upstream } from '../helpers/servers.ts';
import { route, snapshot, upstream } from '../helpers/tables.ts';

let up: Upstream;
let dp: DataPlane;
let delayMs = 0;
const client = new Agent({ connections: 100 });

beforeAll(async () => {
  up = await startUpstream((_req, res) => {
    setTimeout(() => res.end('ok'), delayMs);
    return true;
  });
  dp = await startTestDataPlane({
    adaptiveConcurrency: true,
    initialSnapshot: snapshot([route('all', 'u', '/')], [upstream('u', up.url)]),
  });
});
afterAll(async () => {
  await client.close();
  await dp?.close();
  await up?.close();
});

/** `workers` clients, each sending requests one after another until `until`; the statuses. */
async function load(workers: number, until: number): Promise<{ statuses: number[]; shed: unknown[] }> {
  const statuses: number[] = [];
  const shed: unknown[] = [];
  await Promise.all(
    Array.from({ length: workers }, async () => {
      while (Date.now() < until) {
        const r = await request(`${dp.proxyUrl}/x`, { dispatcher: client });
        statuses.push(r.statusCode);
        if (r.statusCode === 503) {
          shed.push({ retryAfter: r.headers['retry-after'], body: await r.body.json() });
          await sleep(20);
        } else await r.body.text();
      }
    }),
  );
  return { statuses, shed };
}

it('sheds past the adaptive limit once latency rises, and counts it', async () => {
  // The floor: quick answers at a concurrency under the starting limit (100).
  const quick = await load(20, Date.now() + 1_000);
  expect(quick.statuses.every((s) => s === 200)).toBe(true);
  // Latency rises 20× and stays: the limit falls below the 60 clients kept up.
  delayMs = 100;
  const slow = await load(60, Date.now() + 4_000);
  expect(slow.shed.length).toBeGreaterThan(0);
  expect(slow.shed[0]).toMatchObject({ retryAfter: '1', body: { code: 'SLC_ERR_OVERLOADED' } });
  const metric = await dp.metrics.registry.getSingleMetricAsString('sluice_requests_shed_total');
  expect(metric).toMatch(/sluice_requests_shed_total\{reason="adaptive"\} [1-9]/);
  expect(metric).not.toMatch(/reason="max_in_flight"\} [1-9]/);
});
