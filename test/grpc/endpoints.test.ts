/**
 * A grpc route whose upstream lists endpoints (a Service's ready addresses), through the real
 * data plane to two real gRPC servers on one port of 127.0.0.1 and 127.0.0.2: calls spread over
 * the endpoints by the upstream's balance with the url's :authority, an endpoint that leaves
 * gets no new call while its call under way completes (the staying one keeps its connection),
 * a snapshot refused after its upstreams were staged changes nothing, and none ready is the
 * proxy's 503 problem with no call made. The url resolves nowhere: calls can only go to the
 * endpoints.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tableHash } from '../../dataplane/config/wire.ts';
import type { Balance, Endpoint, Snapshot } from '../../dataplane/config/route-table.ts';
import { openChannels } from '../../dataplane/handlers/grpc/channels.ts';
import type { DataPlane } from '../../dataplane/main.ts';
import { startTestDataPlane } from '../helpers/servers.ts';
import { call, gatewayRoute, rule, snapshotOf } from './helpers.ts';
import { startGrpcServer, type TestGrpcServer } from './server.ts';
import { until } from '../helpers/until.ts';

let a: TestGrpcServer;
let b: TestGrpcServer;
let dp: DataPlane;

beforeAll(async () => {
  a = await startGrpcServer({ host: '127.0.0.1' });
  b = await startGrpcServer({ host: '127.0.0.2', port: a.port });
  dp = await startTestDataPlane();
});

afterAll(async () => {
  await dp?.close();
  await a?.close();
  await b?.close();
});

const at = (s: TestGrpcServer): Endpoint => ({ address: new URL(s.url).hostname, port: s.port });

/** Service `name` (its upstream id follows) at `url`, its upstream given these endpoints. */
function table(name: string, url: string, endpoints: Endpoint[], balance?: Balance): Snapshot {
  const built = snapshotOf([
    gatewayRoute(name, url, [
      rule('get', '/v1/items', 'GetItem', { annotation: true }),
      rule('slow', '/slow', 'Slow', { body: '*' }),
    ]),
  ]);
  const t = structuredClone(built.table);
  t.upstreams = t.upstreams.map((u) => ({ ...u, endpoints, ...(balance && { balance }) }));
  return { hash: tableHash(t), table: t };
}

const unresolvable = () => `http://svc.test.invalid:${a.port}`;

function serve(name: string, endpoints: Endpoint[], balance?: Balance, url = unresolvable()): void {
  expect(dp.holder.apply(table(name, url, endpoints, balance))).toMatchObject({ result: 'applied' });
}

/** GET /v1/items/<id>: which server took the call (the calls are made one at a time). */
async function served(id: string, headers: Record<string, string> = {}): Promise<'a' | 'b'> {
  const before = [a.calls.GetItem ?? 0, b.calls.GetItem ?? 0];
  const r = await call(dp.proxyUrl, `/v1/items/${id}`, { headers });
  expect(r.status).toBe(200);
  expect(r.json.itemId).toBe(id);
  const took = [(a.calls.GetItem ?? 0) - before[0], (b.calls.GetItem ?? 0) - before[1]];
  expect(took[0] + took[1]).toBe(1);
  return took[0] === 1 ? 'a' : 'b';
}

async function spread(n: number): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (let i = 0; i < n; i++) {
    const who = await served(`i-${i}`);
    counts[who] = (counts[who] ?? 0) + 1;
  }
  return counts;
}

describe('grpc over endpoints', () => {
  it('spreads calls round robin over the endpoints, each with the url’s :authority', async () => {
    serve('rr', [at(a), at(b)]);
    expect(await spread(20)).toEqual({ a: 10, b: 10 });
    const authority = `svc.test.invalid:${a.port}`;
    expect([a.authority.GetItem, b.authority.GetItem]).toEqual([authority, authority]);
  });

  it('honours the upstream’s balance: consistent-hash keeps a header value on its endpoint', async () => {
    serve('ch', [at(a), at(b)], { policy: 'consistent-hash', hashOn: { header: 'x-user' } });
    const first = new Map<string, string>();
    for (let i = 0; i < 20; i++) first.set(`user-${i}`, await served('x', { 'x-user': `user-${i}` }));
    for (const [user, who] of first) expect(await served('x', { 'x-user': user })).toBe(who);
    expect(new Set(first.values())).toEqual(new Set(['a', 'b']));
  });

  it('an endpoint that leaves gets no new call, its call under way completes, the one that stays keeps its connection', async () => {
    serve('drain', [at(a), at(b)]);
    await spread(4); // both channels warm
    const slowBefore = [a.calls.Slow ?? 0, b.calls.Slow ?? 0];
    const slow = call(dp.proxyUrl, '/slow', { method: 'POST', body: '{"ms":800}' });
    await until(() => (a.calls.Slow ?? 0) + (b.calls.Slow ?? 0) > slowBefore[0] + slowBefore[1]);
    const [gone, stays] = (a.calls.Slow ?? 0) > slowBefore[0] ? [a, b] : [b, a];
    const goneCalls = gone.calls.GetItem;
    const staysConnections = stays.connections();
    const channels = openChannels();
    serve('drain', [at(stays)]);
    expect(openChannels()).toBe(channels - 1); // closed at once: grpc-js lets the call on it finish
    for (let i = 0; i < 10; i++) expect(await served(`after-${i}`)).toBe(stays === a ? 'a' : 'b');
    expect(gone.calls.GetItem).toBe(goneCalls);
    expect(stays.connections()).toBe(staysConnections);
    const answer = await slow;
    expect(answer.status).toBe(200);
    expect(answer.json).toEqual({});
  });

  it('a snapshot refused once its upstreams were staged changes nothing', async () => {
    serve('kept', [at(a), at(b)]);
    const next = table('kept', unresolvable(), [at(b)]);
    // A second route on the same upstream whose protos do not parse: bound after the first
    // (which staged the upstream's new endpoints), it makes the build throw. The door would
    // refuse it earlier, so it goes in past the door.
    const broken = structuredClone(next.table.routes.find((r) => r.handler.type === 'grpc')!);
    broken.id = `${broken.id}-broken`;
    (broken.handler as { protos: { name: string; content: string }[] }).protos = [
      { name: 'broken.proto', content: 'syntax = "proto3"; message {' },
    ];
    next.table.routes.push(broken);
    next.hash = tableHash(next.table);
    expect(dp.holder.applyValid(next)).toMatchObject({ result: 'rejected' });
    expect(await spread(10)).toEqual({ a: 5, b: 5 });
  });

  it('no ready endpoint: the proxy’s 503 problem, and no call is made', async () => {
    // The url is a's own address: only the empty list keeps the call from being made there.
    serve('none', [], undefined, a.url);
    const before = a.calls.GetItem ?? 0;
    const r = await call(dp.proxyUrl, '/v1/items/1');
    expect(r.status).toBe(503);
    expect(r.headers['content-type']).toBe('application/problem+json');
    expect(r.json).toMatchObject({ code: 'SLC_ERR_UPSTREAM_NO_ENDPOINTS', status: 503 });
    expect(a.calls.GetItem ?? 0).toBe(before);
    serve('none', [at(b)], undefined, a.url);
    expect(await served('2')).toBe('b');
  });
});
