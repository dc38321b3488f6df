/**
 * Request mirrors on a real data plane, real upstreams and real clients: each mirror gets a copy
 * (method, path after the route's rewrite, headers, body) while the client gets the main
 * upstream's answer; a share of the requests is copied by the weighted choice; a slow or dead
 * mirror neither slows nor breaks the main request; copies under way are bounded per process,
 * the rest dropped and counted.
 */
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Route } from '../../dataplane/config/route-table.ts';
import { MAX_IN_FLIGHT } from '../../dataplane/handlers/proxy/mirror.ts';
import type { DataPlane } from '../../dataplane/main.ts';
import { metricValue } from '../helpers/processes.ts';
import { freePort, startTestDataPlane, startUpstream, type Upstream } from '../helpers/servers.ts';
import { route, snapshot, upstream } from '../helpers/tables.ts';
import { waitFor } from '../helpers/until.ts';

let dp: DataPlane;
let main: Upstream;
let copy: Upstream;
let slow: Upstream;
let held: Upstream;
let heldCount = 0;

const mirrored = (
  name: string,
  path: string,
  mirrors: NonNullable<Extract<Route['handler'], { type: 'proxy' }>['mirrors']>,
  more = {},
) => ({
  ...route(name, 'main', path, more),
  handler: { type: 'proxy' as const, upstream: 'main', mirrors },
});

beforeAll(async () => {
  main = await startUpstream();
  copy = await startUpstream();
  slow = await startUpstream((_req, res) => {
    setTimeout(() => res.end('late'), 1_500).unref();
    return true;
  });
  // Never answers (its requests wait for the upstream's response timeout).
  held = await startUpstream(() => {
    heldCount++;
    return true;
  });
  const dead = await freePort();
  dp = await startTestDataPlane({
    initialSnapshot: snapshot(
      [
        mirrored('all', '/all', [{ upstream: 'copy' }], {
          rewrite: { path: { type: 'ReplacePrefixMatch', value: '/rewritten' } },
        }),
        mirrored('quarter', '/quarter', [{ upstream: 'copy', fraction: { numerator: 1, denominator: 4 } }]),
        mirrored('slow', '/slow', [{ upstream: 'slow' }, { upstream: 'dead' }]),
        mirrored('held', '/held', [{ upstream: 'held' }]),
      ],
      [
        upstream('main', main.url),
        upstream('copy', `${copy.url}/copies`),
        upstream('slow', slow.url),
        upstream('dead', `http://127.0.0.1:${dead}`, { connectMs: 200 }),
        upstream('held', held.url, { responseMs: 3_000 }),
      ],
    ),
  });
});

afterAll(async () => {
  await dp?.close();
  for (const u of [main, copy, slow, held]) await u?.close();
});

const copies = (path: string) => copy.seen.filter((r) => r.url.includes(path));

describe('request mirrors', () => {
  it('copy the request (rewritten path, headers, body) and answer with the main upstream', async () => {
    const res = await request(`${dp.proxyUrl}/all/x?q=1`, {
      method: 'POST',
      body: '{"a":1}',
      headers: { 'content-type': 'application/json', 'x-tag': 't1' },
    });
    const answer = (await res.body.json()) as { url: string };
    expect(answer.url).toBe('/rewritten/x?q=1');
    await waitFor(
      'the copy',
      async () => copies('/copies/rewritten/x'),
      (c) => c.length === 1,
    );
    const [c] = copies('/copies/rewritten/x');
    expect([c.method, c.url, c.body, c.headers['x-tag']]).toEqual([
      'POST',
      '/copies/rewritten/x?q=1',
      '{"a":1}',
      't1',
    ]);
    expect(c.headers['x-request-id']).toBe(main.seen.at(-1)?.headers['x-request-id']);
  });

  it('copy a share of the requests, as exact as the weighted choice', async () => {
    for (let i = 0; i < 40; i++) await request(`${dp.proxyUrl}/quarter/${i}`).then((r) => r.body.dump());
    const n = await waitFor(
      'the copies',
      async () => copies('/copies/quarter/').length,
      (x) => x >= 8,
    );
    expect(n).toBeGreaterThanOrEqual(8);
    expect(n).toBeLessThanOrEqual(12);
  });

  it('a slow or dead mirror neither slows nor breaks the main request', async () => {
    const started = Date.now();
    const res = await request(`${dp.proxyUrl}/slow/a`);
    await res.body.dump();
    expect(res.statusCode).toBe(200);
    expect(Date.now() - started).toBeLessThan(1_000);
    await waitFor(
      'the slow copy arrived',
      async () => slow.seen.length,
      (x) => x === 1,
    );
  });

  it(`at most ${MAX_IN_FLIGHT} copies are under way at once; the rest are dropped and counted`, async () => {
    const n = MAX_IN_FLIGHT + 40;
    const replies = await Promise.all(
      Array.from({ length: n }, (_, i) =>
        request(`${dp.proxyUrl}/held/${i}`).then(async (r) => {
          await r.body.dump();
          return r.statusCode;
        }),
      ),
    );
    expect(replies.every((s) => s === 200)).toBe(true);
    const dropped = async () =>
      metricValue(await dp.metrics.registry.metrics(), 'sluice_mirror_requests_total', {
        route: 'route/test/held/held/0',
        outcome: 'dropped',
      });
    expect(await dropped()).toBeGreaterThanOrEqual(40);
    expect(heldCount).toBeLessThanOrEqual(MAX_IN_FLIGHT);
  });
});
