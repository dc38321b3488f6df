/**
 * An upstream of endpoints (a Service's ready addresses), through the real data plane to real
 * back ends on loopback (127.0.0.1, 127.0.0.2 and ::1): how requests spread under each policy,
 * that the url still gives the Host header and base path, that an endpoint leaving is drained
 * (its request in flight finishes, nothing new goes to it, then its connections close), that a
 * retry goes to another endpoint, and that none ready is a 503 problem.
 */
import { once } from 'node:events';
import { request } from 'undici';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { Upstream } from '../../dataplane/config/route-table.ts';
import type { DataPlane } from '../../dataplane/main.ts';
import { freePort, startTestDataPlane } from '../helpers/servers.ts';
import { route, snapshot, upstream } from '../helpers/tables.ts';
import { startWsUpstream } from '../helpers/ws-upstream.ts';
import { type Backend, endpointOf, startBackend } from './backends.ts';
import { until } from '../helpers/until.ts';

/** Resolves nowhere: connections can only go to the endpoints. */
const URL_ = 'http://svc.test.invalid:8080/base';

let a: Backend;
let b: Backend;
let c: Backend;
let dp: DataPlane;
const started: Backend[] = [];

beforeAll(async () => {
  [a, b, c] = await Promise.all([
    startBackend('a', '127.0.0.1'),
    startBackend('b', '127.0.0.2'),
    startBackend('c', '::1'),
  ]);
  started.push(a, b, c);
  dp = await startTestDataPlane();
});
afterAll(async () => {
  await dp.close();
  await Promise.all(started.map((s) => s.close()));
});
beforeEach(() => {
  for (const s of started) {
    s.hits = 0;
    s.delayMs = 0;
    s.failing = false;
  }
});

function up(id: string, extra: Partial<Upstream>): Upstream {
  return { ...upstream(id, URL_), ...extra };
}

/** Runs one upstream behind one route (prefix /<id>); the previous test's are retired. */
function serve(u: Upstream): void {
  const r = dp.holder.apply(snapshot([route(u.id, u.id, `/${u.id}`)], [u]));
  expect(r).toMatchObject({ result: 'applied' });
}

async function get(path: string, headers: Record<string, string> = {}) {
  const res = await request(`${dp.proxyUrl}${path}`, { headers });
  const text = await res.body.text();
  const name = res.statusCode === 200 ? (JSON.parse(text) as { name: string }).name : null;
  return { status: res.statusCode, name, text, type: res.headers['content-type'] };
}

/** n requests, `concurrency` at a time: the name of the back end that answered each. */
async function names(n: number, concurrency: number, path: string): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < n) {
        next++;
        const r = await get(path);
        expect(r.status).toBe(200);
        counts[r.name!] = (counts[r.name!] ?? 0) + 1;
      }
    }),
  );
  return counts;
}

describe('round robin (the default)', () => {
  it('300 requests over 3 endpoints: 100 each, with the url’s Host header and base path', async () => {
    serve(up('rr', { endpoints: [a, b, c].map(endpointOf) }));
    expect(await names(300, 10, '/rr/x')).toEqual({ a: 100, b: 100, c: 100 });
    for (const s of [a, b, c]) expect(s.last).toEqual({ url: '/base/rr/x', host: 'svc.test.invalid:8080' });
  });
});

describe('least-request', () => {
  it('idle endpoints tie, and ties go round robin', async () => {
    serve(up('lr', { endpoints: [a, b, c].map(endpointOf), balance: { policy: 'least-request' } }));
    expect(await names(30, 1, '/lr')).toEqual({ a: 10, b: 10, c: 10 });
  });

  it('a slow endpoint (more in flight) gets fewer requests', async () => {
    serve(up('lr2', { endpoints: [a, b, c].map(endpointOf), balance: { policy: 'least-request' } }));
    a.delayMs = 150;
    const counts = await names(90, 6, '/lr2');
    // Round robin would send it 30.
    expect(counts.a ?? 0).toBeLessThan(12);
    expect(counts.b).toBeGreaterThan(35);
    expect(counts.c).toBeGreaterThan(35);
  });
});

describe('consistent hashing', () => {
  const users = Array.from({ length: 60 }, (_, i) => `user-${i}`);

  it('a header value keeps its endpoint; removing one endpoint moves only its values', async () => {
    const balance = { policy: 'consistent-hash', hashOn: { header: 'x-user' } } as const;
    serve(up('ch', { endpoints: [a, b, c].map(endpointOf), balance }));
    const before = new Map<string, string>();
    for (const u of users) before.set(u, (await get('/ch', { 'x-user': u })).name!);
    for (const u of users) expect((await get('/ch', { 'x-user': u })).name).toBe(before.get(u));
    const share = (n: string) => [...before.values()].filter((v) => v === n).length;
    for (const n of ['a', 'b', 'c']) expect(share(n)).toBeGreaterThanOrEqual(8);

    // The same upstream id without c (a pod left the slice).
    serve(up('ch', { endpoints: [a, b].map(endpointOf), balance }));
    for (const u of users) {
      const now = (await get('/ch', { 'x-user': u })).name!;
      if (before.get(u) === 'c') expect(['a', 'b']).toContain(now);
      else expect(now).toBe(before.get(u));
    }
  });

  it('on a cookie; a request without the value goes round robin', async () => {
    const balance = { policy: 'consistent-hash', hashOn: { cookie: 'session' } } as const;
    serve(up('chc', { endpoints: [a, b, c].map(endpointOf), balance }));
    for (const u of users.slice(0, 10)) {
      const first = (await get('/chc', { cookie: `theme=dark; session=${u}` })).name;
      expect((await get('/chc', { cookie: `session=${u}; theme=light` })).name).toBe(first);
    }
    const without = [];
    for (let i = 0; i < 3; i++) without.push((await get('/chc', { cookie: 'theme=dark' })).name);
    expect(without.sort()).toEqual(['a', 'b', 'c']);
  });
});

describe('an endpoint leaving the slice', () => {
  it('is drained: its request in flight completes, no new request goes to it, then its connections close', async () => {
    const [d, e] = await Promise.all([startBackend('d'), startBackend('e', '127.0.0.2')]);
    started.push(d, e);
    serve(up('drain', { endpoints: [d, e].map(endpointOf) }));
    // A fresh upstream's first turn is its first endpoint: d.
    const slow = get('/drain/slow/600');
    await until(() => d.hits === 1);
    serve(up('drain', { endpoints: [endpointOf(e)] }));
    expect(await names(20, 4, '/drain')).toEqual({ e: 20 });
    expect(d.hits).toBe(1);
    expect(d.sockets.size).toBeGreaterThan(0); // not cut
    const answer = await slow;
    expect(answer).toMatchObject({ status: 200, name: 'd' });
    await until(() => d.sockets.size === 0);
    // e's pool is the same warm one: its connections stayed open.
    expect(e.sockets.size).toBeGreaterThan(0);
  });

  it('one that joins takes its share at once', async () => {
    serve(up('join', { endpoints: [a, b].map(endpointOf) }));
    expect(await names(20, 2, '/join')).toEqual({ a: 10, b: 10 });
    serve(up('join', { endpoints: [a, b, c].map(endpointOf) }));
    expect(await names(30, 3, '/join')).toEqual({ a: 10, b: 10, c: 10 });
  });
});

describe('retries', () => {
  const retries = {
    attempts: 1,
    statuses: [503],
    backoffBaseMs: 0,
    backoffMaxMs: 0,
    budgetPercent: 100,
    minRetriesPerSecond: 10,
    idempotentBackend: false,
  };

  it('a retry after a retryable status goes to another endpoint (for a hashed value: its second choice)', async () => {
    const balance = { policy: 'consistent-hash', hashOn: { header: 'x-user' } } as const;
    serve(up('retry', { endpoints: [a, b, c].map(endpointOf), retries, balance }));
    a.failing = true;
    for (let i = 0; i < 30; i++) {
      const r = await get('/retry', { 'x-user': `user-${i}` });
      expect(r.status).toBe(200);
      expect(['b', 'c']).toContain(r.name);
    }
    expect(a.hits).toBeGreaterThan(0); // some values chose a first
  });

  it('a retry after a refused connection goes to another endpoint', async () => {
    const dead = { address: '127.0.0.1', port: await freePort() };
    serve(up('retry2', { endpoints: [dead, endpointOf(b)], retries }));
    expect(await names(10, 1, '/retry2')).toEqual({ b: 10 });
  });
});

describe('no ready endpoint', () => {
  it('is a 503 problem; an endpoint that comes later is used', async () => {
    serve(up('none', { endpoints: [] }));
    const r = await get('/none');
    expect(r.status).toBe(503);
    expect(r.type).toBe('application/problem+json');
    expect(JSON.parse(r.text)).toMatchObject({ code: 'SLC_ERR_UPSTREAM_NO_ENDPOINTS', status: 503 });
    serve(up('none', { endpoints: [endpointOf(b)] }));
    expect(await get('/none')).toMatchObject({ status: 200, name: 'b' });
  });

  it('refuses a WebSocket upgrade with the same 503', async () => {
    serve(up('wsnone', { endpoints: [] }));
    const client = new WebSocket(`${dp.proxyUrl.replace('http', 'ws')}/wsnone`);
    const [, res] = await once(client, 'unexpected-response');
    expect(res.statusCode).toBe(503);
    expect(res.headers['content-type']).toBe('application/problem+json');
  });
});

it('a WebSocket is tunnelled to an endpoint, with the url’s Host', async () => {
  const ws = await startWsUpstream();
  try {
    const port = Number(new URL(ws.url).port);
    serve(up('ws', { endpoints: [{ address: '127.0.0.1', port }] }));
    const client = new WebSocket(`${dp.proxyUrl.replace('http', 'ws')}/ws/room`);
    await once(client, 'open');
    client.send('hi');
    const [msg] = await once(client, 'message');
    expect(String(msg)).toBe('echo:hi');
    expect(ws.upgrades.at(-1)?.headers.host).toBe('svc.test.invalid:8080');
    expect(ws.upgrades.at(-1)?.url).toBe('/base/ws/room');
    client.close();
    await once(client, 'close');
  } finally {
    await ws.close();
  }
});

describe('the door', () => {
  const errorsOf = (u: Upstream) => {
    const r = dp.holder.apply(snapshot([route('v', 'upstream/v', '/v')], [u]));
    expect(r.result).toBe('rejected');
    return (r as { errors: { id?: string; field: string; message: string }[] }).errors;
  };

  it('names the field of a malformed endpoint or balance', () => {
    const fields = (u: Upstream) => errorsOf(u).map((e) => [e.id, e.field]);
    expect(fields(up('upstream/v', { endpoints: [{ address: '10.0.0.1', port: 0 }] }))).toContainEqual([
      'upstream/v',
      'endpoints[0].port',
    ]);
    expect(
      fields(up('upstream/v', { endpoints: [], balance: { policy: 'random' } as never })),
    ).toContainEqual(['upstream/v', 'balance.policy']);
    expect(
      fields(
        up('upstream/v', {
          endpoints: [],
          balance: { policy: 'consistent-hash', hashOn: { header: 'X-User' } },
        }),
      ),
    ).toContainEqual(['upstream/v', 'balance.hashOn']);
  });

  it('refuses a host name or a zone for an address, a duplicate, and a balance that does not fit', () => {
    const ep = (address: string, port = 80) => ({ address, port });
    expect(
      errorsOf(
        up('upstream/v', {
          endpoints: [ep('10.0.0.1'), ep('backend.local'), ep('fe80::1%eth0'), ep('10.0.0.1'), ep('fd00::1')],
          balance: { policy: 'consistent-hash' },
        }),
      ),
    ).toEqual([
      { id: 'upstream/v', field: 'balance.hashOn', message: expect.stringContaining('header or a cookie') },
      { id: 'upstream/v', field: 'endpoints[1].address', message: expect.stringContaining('backend.local') },
      { id: 'upstream/v', field: 'endpoints[2].address', message: expect.stringContaining('fe80::1%eth0') },
      { id: 'upstream/v', field: 'endpoints[3]', message: '10.0.0.1:80 is listed twice' },
    ]);
    expect(errorsOf(up('upstream/v', { balance: { policy: 'least-request' } }))).toEqual([
      { id: 'upstream/v', field: 'balance', message: 'applies only to an upstream with endpoints' },
    ]);
    expect(
      errorsOf(
        up('upstream/v', {
          endpoints: [ep('10.0.0.1')],
          balance: { policy: 'round-robin', hashOn: { cookie: 's' } },
        }),
      ),
    ).toEqual([{ id: 'upstream/v', field: 'balance.hashOn', message: 'has no meaning for round-robin' }]);
    const outlierDetection = {
      consecutiveFailures: 5,
      baseEjectionMs: 30_000,
      maxEjectionMs: 1_000,
      maxEjectionPercent: 50,
    };
    expect(errorsOf(up('upstream/v', { outlierDetection }))).toEqual([
      { id: 'upstream/v', field: 'outlierDetection', message: 'applies only to an upstream with endpoints' },
      {
        id: 'upstream/v',
        field: 'outlierDetection.maxEjectionMs',
        message: 'must be at least baseEjectionMs',
      },
    ]);
  });
});
