/**
 * Passive outlier detection (dataplane/upstream/outlier.ts) through the real data plane, with
 * real back ends on 127.0.0.1, 127.0.0.2 and ::1 behind one upstream of endpoints: an endpoint
 * answering consecutiveFailures 5xx in a row is left out of the balance for baseEjectionMs, and
 * comes back after it; ejected again, it stays out twice as long; one refusing connections is
 * ejected alike; and no more than maxEjectionPercent of the endpoints are ever out at once.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { request } from 'undici';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { OutlierDetection, Upstream } from '../../dataplane/config/route-table.ts';
import type { DataPlane } from '../../dataplane/main.ts';
import { freePort, startTestDataPlane } from '../helpers/servers.ts';
import { route, snapshot, upstream } from '../helpers/tables.ts';
import { until } from '../helpers/until.ts';
import { type Backend, endpointOf, startBackend } from './backends.ts';

let a: Backend;
let b: Backend;
let c: Backend;
let dp: DataPlane;

beforeAll(async () => {
  [a, b, c] = await Promise.all([
    startBackend('a', '127.0.0.1'),
    startBackend('b', '127.0.0.2'),
    startBackend('c', '::1'),
  ]);
  dp = await startTestDataPlane();
});
afterAll(async () => {
  await dp.close();
  await Promise.all([a, b, c].map((s) => s.close()));
});
beforeEach(() => {
  for (const s of [a, b, c]) {
    s.hits = 0;
    s.failing = false;
  }
});

/** One upstream of endpoints (round robin) behind /<id>; the previous test's is retired. */
function serve(id: string, endpoints: Upstream['endpoints'], outlierDetection: OutlierDetection): void {
  const u: Upstream = { ...upstream(id, 'http://svc.test.invalid:8080'), endpoints, outlierDetection };
  expect(dp.holder.apply(snapshot([route(id, id, `/${id}`)], [u]))).toMatchObject({ result: 'applied' });
}

/** n requests one after another: the status of each. */
async function statuses(n: number, path: string): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const res = await request(`${dp.proxyUrl}${path}`);
    await res.body.dump();
    out.push(res.statusCode);
  }
  return out;
}

describe('passive outlier detection', () => {
  it('ejects an endpoint after consecutive 5xx, brings it back after baseEjectionMs, then ejects it for twice as long', async () => {
    serve('eject', [a, b, c].map(endpointOf), {
      consecutiveFailures: 3,
      baseEjectionMs: 500,
      maxEjectionMs: 10_000,
      maxEjectionPercent: 50,
    });
    a.failing = true;
    // Round robin: a's third 503 is the 7th request at the latest; it is out from then on.
    await statuses(9, '/eject');
    expect(a.hits).toBe(3);
    expect(await statuses(20, '/eject')).toEqual(Array(20).fill(200));
    expect(a.hits).toBe(3);

    // Back after 500 ms: it gets requests again, and three more failures eject it for 1000 ms.
    await sleep(550);
    await until(async () => {
      await statuses(1, '/eject');
      return a.hits === 6;
    });
    const ejectedAt = Date.now();
    expect(await statuses(10, '/eject')).toEqual(Array(10).fill(200));
    await sleep(Math.max(0, ejectedAt + 650 - Date.now())); // past the first ejection's length
    await statuses(6, '/eject');
    expect(a.hits).toBe(6); // still out
    await until(
      async () => {
        await statuses(1, '/eject');
        return a.hits > 6;
      },
      3_000,
      20,
    );
    expect(Date.now() - ejectedAt).toBeGreaterThanOrEqual(1_000);
  });

  it('a success resets the run: failures that are not consecutive eject nothing', async () => {
    serve('reset', [a, b].map(endpointOf), {
      consecutiveFailures: 2,
      baseEjectionMs: 10_000,
      maxEjectionMs: 10_000,
      maxEjectionPercent: 50,
    });
    // a answers 503, 200, 503, 200, …: never two failures in a row.
    for (let i = 0; i < 6; i++) {
      a.failing = i % 2 === 0;
      await statuses(2, '/reset'); // one on a, one on b
    }
    expect(a.hits).toBe(6);
  });

  it('ejects an endpoint that refuses connections (its tries get 502)', async () => {
    const dead = { address: '127.0.0.1', port: await freePort() };
    serve('dead', [dead, endpointOf(b)], {
      consecutiveFailures: 2,
      baseEjectionMs: 10_000,
      maxEjectionMs: 10_000,
      maxEjectionPercent: 50,
    });
    const first = await statuses(4, '/dead');
    expect(first.filter((s) => s === 502)).toHaveLength(2);
    expect(await statuses(10, '/dead')).toEqual(Array(10).fill(200));
  });

  it('never ejects more than maxEjectionPercent of the endpoints', async () => {
    serve('cap', [a, b].map(endpointOf), {
      consecutiveFailures: 2,
      baseEjectionMs: 10_000,
      maxEjectionMs: 10_000,
      maxEjectionPercent: 50,
    });
    a.failing = true;
    b.failing = true;
    // a's second 503 ejects it (1 of 2 is 50 %); b's finds no room and b keeps its traffic.
    expect(await statuses(14, '/cap')).toEqual(Array(14).fill(503));
    expect([a.hits, b.hits].sort((x, y) => x - y)).toEqual([2, 12]);

    // 0 %: nothing is ever ejected.
    a.hits = 0;
    b.hits = 0;
    serve('none', [a, b].map(endpointOf), {
      consecutiveFailures: 1,
      baseEjectionMs: 10_000,
      maxEjectionMs: 10_000,
      maxEjectionPercent: 0,
    });
    await statuses(10, '/none');
    expect([a.hits, b.hits]).toEqual([5, 5]);
  });
});
