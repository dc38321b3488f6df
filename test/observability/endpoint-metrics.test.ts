/**
 * sluice_upstream_endpoints{upstream, state}, read from a real data plane's /metrics: an upstream
 * of endpoints shows how many are ready (in the snapshot) and draining (dropped by a snapshot,
 * their requests still under way). Real back ends on 127.0.0.1, 127.0.0.2 and ::1: a snapshot
 * that drops the endpoint with a slow request in flight counts it draining until that request
 * ends and its pool closes; an upstream without endpoints has no series, and an upstream leaving
 * the table takes its series with it.
 */
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Upstream } from '../../dataplane/config/route-table.ts';
import type { DataPlane } from '../../dataplane/main.ts';
import { startTestDataPlane } from '../helpers/servers.ts';
import { route, snapshot, upstream } from '../helpers/tables.ts';
import { until } from '../helpers/until.ts';
import { type Backend, endpointOf, startBackend } from '../upstream/backends.ts';

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
  await dp?.close();
  await Promise.all([a, b, c].map((s) => s?.close()));
});

const svc = (endpoints: Backend[]): Upstream => ({
  ...upstream('svc', 'http://svc.test.invalid:8080'),
  endpoints: endpoints.map(endpointOf),
});
function serve(...upstreams: Upstream[]): void {
  const r = dp.holder.apply(
    snapshot(
      upstreams.map((u) => route(u.id, u.id, `/${u.id}`)),
      upstreams,
    ),
  );
  expect(r).toMatchObject({ result: 'applied' });
}

/** The gauge's samples on a scrape: "upstream state" → value. */
async function endpointGauge(): Promise<Record<string, number>> {
  const text = await (await request(`${dp.adminUrl}/metrics`)).body.text();
  const out: Record<string, number> = {};
  for (const m of text.matchAll(/^sluice_upstream_endpoints\{upstream="([^"]+)",state="([^"]+)"\} (\S+)$/gm))
    out[`${m[1]} ${m[2]}`] = Number(m[3]);
  return out;
}

describe('sluice_upstream_endpoints', () => {
  it('counts ready endpoints, and a dropped one as draining until its request in flight ends', async () => {
    serve(svc([a, b]), upstream('plain', `http://127.0.0.1:${c.port}`));
    // The url-only upstream has no endpoints: no series.
    expect(await endpointGauge()).toEqual({ 'svc ready': 2, 'svc draining': 0 });

    // A fresh upstream's first turn is its first endpoint: a, slow.
    const slow = request(`${dp.proxyUrl}/svc/slow/700`).then(async (r) => {
      await r.body.dump();
      return r.statusCode;
    });
    await until(() => a.hits === 1);
    serve(svc([b, c]), upstream('plain', `http://127.0.0.1:${c.port}`));
    expect(await endpointGauge()).toEqual({ 'svc ready': 2, 'svc draining': 1 });

    expect(await slow).toBe(200);
    await until(async () => (await endpointGauge())['svc draining'] === 0);
    expect(await endpointGauge()).toEqual({ 'svc ready': 2, 'svc draining': 0 });
    expect(a.sockets.size).toBe(0);

    // An endpoint that no request ever reached has no pool: dropped, it is gone at once.
    serve(svc([b]), upstream('plain', `http://127.0.0.1:${c.port}`));
    await until(async () => (await endpointGauge())['svc draining'] === 0);
    expect(await endpointGauge()).toEqual({ 'svc ready': 1, 'svc draining': 0 });

    // None ready: 0, still a series.
    serve(svc([]));
    expect(await endpointGauge()).toEqual({ 'svc ready': 0, 'svc draining': 0 });

    // The upstream leaves the table: its series go with it.
    serve(upstream('plain', `http://127.0.0.1:${c.port}`));
    expect(await endpointGauge()).toEqual({});
  });
});
