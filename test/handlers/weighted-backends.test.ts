/**
 * A proxy route's weighted backends on a real data plane, real upstreams and real clients: the
 * requests split by weight (nothing to a weight of 0), each upstream keeps its own settings (base
 * path, retries), a request's retries stay on the backend it was given, and a backend with a
 * problem instead of an upstream (a Gateway API backendRef that does not resolve) answers its share.
 */
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Upstream as TableUpstream } from '../../dataplane/config/route-table.ts';
import type { ProxyHandler } from '../../dataplane/handlers/proxy/manifest.ts';
import type { DataPlane } from '../../dataplane/main.ts';
import { startTestDataPlane, startUpstream, type Upstream } from '../helpers/servers.ts';
import { route, snapshot, upstream } from '../helpers/tables.ts';

let dp: DataPlane;
const up: Record<'a' | 'b' | 'c' | 'failing' | 'fine', Upstream> = {} as never;

const weighted = (name: string, path: string, backends: ProxyHandler['backends']) => ({
  ...route(name, 'unused', path),
  handler: { type: 'proxy' as const, backends },
});

beforeAll(async () => {
  for (const name of ['a', 'b', 'c', 'fine'] as const) up[name] = await startUpstream();
  up.failing = await startUpstream((_req, res) => {
    res.writeHead(503).end('busy');
    return true;
  });
  const retrying: TableUpstream = {
    ...upstream('failing', up.failing.url),
    retries: {
      attempts: 1,
      statuses: [503],
      backoffBaseMs: 0,
      backoffMaxMs: 0,
      budgetPercent: 100,
      minRetriesPerSecond: 10,
      idempotentBackend: false,
    },
  };
  dp = await startTestDataPlane({
    initialSnapshot: snapshot(
      [
        weighted('split', '/split', [
          { upstream: 'a', weight: 70 },
          { upstream: 'b', weight: 30 },
          { upstream: 'c', weight: 0 },
        ]),
        weighted('retry', '/retry', [
          { upstream: 'failing', weight: 1 },
          { upstream: 'fine', weight: 1 },
        ]),
        weighted('invalid', '/invalid', [
          { upstream: 'fine', weight: 1 },
          { problem: 'SLC_ERR_BACKEND_INVALID', weight: 1 },
        ]),
        weighted('one', '/one', [
          { upstream: 'a', weight: 0 },
          { upstream: 'c', weight: 3 },
        ]),
        weighted('edits', '/edits', [
          {
            upstream: 'a',
            weight: 1,
            requestHeaders: {
              replace: { headers: ['X-Set:set-by-a'] },
              add: { headers: ['X-Set:set-by-a', 'X-Backend:a'] },
              append: { headers: ['X-Append:from-a'] },
              remove: { headers: ['X-Remove'] },
            },
          },
          { upstream: 'b', weight: 1 },
        ]),
        weighted('alone', '/alone', [
          { upstream: 'c', weight: 1, requestHeaders: { add: { headers: ['X-Backend:c'] } } },
        ]),
      ],
      [
        upstream('a', up.a.url),
        upstream('b', `${up.b.url}/b-base`),
        upstream('c', up.c.url),
        retrying,
        upstream('fine', up.fine.url),
      ],
    ),
  });
});

afterAll(async () => {
  await dp?.close();
  for (const u of Object.values(up)) await u?.close();
});

describe("a backend's own request header edits", () => {
  it("edit only the requests that backend gets, after the route's plugins, on a lone backend too", async () => {
    const before = { a: up.a.seen.length, b: up.b.seen.length };
    const headers = { 'x-set': 'client', 'x-append': 'client', 'x-remove': 'client' };
    for (let i = 0; i < 10; i++)
      await request(`${dp.proxyUrl}/edits/x`, { headers }).then((r) => r.body.dump());
    const toA = up.a.seen.slice(before.a);
    const toB = up.b.seen.slice(before.b);
    expect(toA.length + toB.length).toBe(10);
    expect(toA.length).toBeGreaterThan(0);
    expect(toB.length).toBeGreaterThan(0);
    for (const r of toA)
      expect([
        r.headers['x-set'],
        r.headers['x-backend'],
        r.headers['x-append'],
        r.headers['x-remove'],
      ]).toEqual(['set-by-a', 'a', 'client, from-a', undefined]);
    for (const r of toB)
      expect([
        r.headers['x-set'],
        r.headers['x-backend'],
        r.headers['x-append'],
        r.headers['x-remove'],
      ]).toEqual(['client', undefined, 'client', 'client']);
    await request(`${dp.proxyUrl}/alone`).then((r) => r.body.dump());
    expect(up.c.seen.at(-1)?.headers['x-backend']).toBe('c');
  });
});

const seen = () => ({ a: up.a.seen.length, b: up.b.seen.length, c: up.c.seen.length });

async function sendFor(path: string, n: number, batch = 50): Promise<{ status: number; body: string }[]> {
  const replies: { status: number; body: string }[] = [];
  for (let sent = 0; sent < n; sent += batch)
    replies.push(
      ...(await Promise.all(
        Array.from({ length: batch }, async () => {
          const r = await request(`${dp.proxyUrl}${path}`);
          return { status: r.statusCode, body: await r.body.text() };
        }),
      )),
    );
  return replies;
}

const send = async (path: string, n: number, batch = 50) =>
  (await sendFor(path, n, batch)).map((r) => r.status);

describe('weighted backends', () => {
  it('1,000 requests split 70/30 within 1 %, none to the backend of weight 0', async () => {
    const before = seen();
    const statuses = await send('/split/x', 1_000);
    expect(statuses.every((s) => s === 200)).toBe(true);
    const after = seen();
    const a = after.a - before.a;
    const b = after.b - before.b;
    expect(a + b).toBe(1_000);
    expect(Math.abs(b - 300)).toBeLessThanOrEqual(10);
    expect(after.c).toBe(before.c);
  });

  it("each request takes its backend's upstream as it is: b's base path is prepended, a's is none", async () => {
    await send('/split/path', 20, 20);
    expect(up.a.seen.at(-1)?.url).toBe('/split/path');
    expect(up.b.seen.at(-1)?.url).toBe('/b-base/split/path');
  });

  it("a request's retries stay on its backend: the failing one gets two tries per request, the other one each", async () => {
    const statuses = await send('/retry', 40, 10);
    const failed = statuses.filter((s) => s === 503).length;
    const served = statuses.filter((s) => s === 200).length;
    expect(failed + served).toBe(40);
    expect(Math.abs(failed - 20)).toBeLessThanOrEqual(4);
    expect(up.failing.seen).toHaveLength(2 * failed);
    expect(up.fine.seen).toHaveLength(served);
  });

  it('a backend with a problem answers its share with it, calling nothing: half of 100 requests 500, half served', async () => {
    const before = up.fine.seen.length;
    const replies = await sendFor('/invalid', 100, 10);
    const failed = replies.filter((r) => r.status === 500);
    expect(failed.length + replies.filter((r) => r.status === 200).length).toBe(100);
    expect(Math.abs(failed.length - 50)).toBeLessThanOrEqual(4);
    for (const r of failed) expect(r.body).toContain('SLC_ERR_BACKEND_INVALID');
    expect(up.fine.seen.length - before).toBe(100 - failed.length);
  });

  it('one backend of weight above 0 takes every request', async () => {
    const before = seen();
    await send('/one', 20, 20);
    expect(seen()).toEqual({ ...before, c: before.c + 20 });
  });
});
