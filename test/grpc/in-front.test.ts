/**
 * The grpc handler behind the route's plugins and the shared upstream machinery: jwt and
 * idempotency in front (a replayed POST answers from the record and the service is called once),
 * the circuit breaker (UNAVAILABLE answers open it: 503 and no call), a configuration swap
 * (routes keep answering, the channel to an address is kept, not opened again) and the channels
 * released when the data plane closes.
 */
import { randomUUID } from 'node:crypto';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { canonicalJson, sha256Hex } from '../../dataplane/config/canonical-json.ts';
import { openChannels } from '../../dataplane/handlers/grpc/channels.ts';
import type { DataPlane } from '../../dataplane/main.ts';
import { hsJwt, hsJwtResources } from '../helpers/hs-jwt.ts';
import { startTestDataPlane } from '../helpers/servers.ts';
import { call, gatewayRoute, rule, snapshotOf } from './helpers.ts';
import { startGrpcServer, type TestGrpcServer } from './server.ts';

let srv: TestGrpcServer;
let dp: DataPlane;

const plugins = [
  ...hsJwtResources('test', 'shop'),
  {
    apiVersion: 'sluice.dev/v1alpha1',
    kind: 'GatewayPlugin',
    metadata: { name: 'idem', namespace: 'test', generation: 1 },
    spec: { plugin: 'idempotency', idempotency: {} },
  },
];

const resources = (extraRule?: Record<string, unknown>) => [
  ...plugins,
  gatewayRoute('shop', srv.url, [
    rule(
      'create',
      '/v1/shelves',
      'CreateItem',
      { annotation: true },
      { plugins: [{ name: 'jwt' }, { name: 'idem' }] },
    ),
    rule('get', '/v1/items', 'GetItem', { annotation: true }),
    ...(extraRule ? [extraRule] : []),
  ]),
  gatewayRoute('flaky', srv.url, [rule('fail', '/fail', 'Fail', { body: '*' })], {
    circuitBreaker: { minRequests: 4, errorPercent: 50, openFor: '1m' },
  }),
];

let channelsBefore = 0;

beforeAll(async () => {
  srv = await startGrpcServer();
  channelsBefore = openChannels();
  dp = await startTestDataPlane({ initialSnapshot: snapshotOf(resources()) });
});

afterAll(async () => {
  await dp?.close();
  await srv?.close();
});

describe('grpc behind plugins', () => {
  it('jwt in front: no token, 401 and no call', async () => {
    const before = srv.calls.CreateItem ?? 0;
    const r = await call(dp.proxyUrl, '/v1/shelves/a/items', { method: 'POST', body: '{"displayName":"x"}' });
    expect(r.status).toBe(401);
    expect(srv.calls.CreateItem ?? 0).toBe(before);
  });

  it('idempotency in front: the replayed POST answers from the record, the service is called once', async () => {
    const headers = {
      authorization: `Bearer ${await hsJwt('shop')}`,
      'idempotency-key': `k-${randomUUID()}`,
    };
    const before = srv.calls.CreateItem ?? 0;
    const body = JSON.stringify({ displayName: 'Cup' });
    const first = await call(dp.proxyUrl, '/v1/shelves/top/items', { method: 'POST', headers, body });
    expect(first.status).toBe(200);
    expect(first.json).toEqual({ itemId: 'top/Cup', displayName: 'Cup' });
    const again = await call(dp.proxyUrl, '/v1/shelves/top/items', { method: 'POST', headers, body });
    expect(again.status).toBe(200);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.json).toEqual(first.json);
    expect(srv.calls.CreateItem).toBe(before + 1);
    // The same key for another body: refused, nothing executed.
    const other = await call(dp.proxyUrl, '/v1/shelves/top/items', {
      method: 'POST',
      headers,
      body: '{"displayName":"Pot"}',
    });
    expect(other.status).toBe(422);
    expect(srv.calls.CreateItem).toBe(before + 1);
  });
});

describe('grpc and the circuit breaker', () => {
  it('UNAVAILABLE answers open the breaker: then 503 without a call', async () => {
    const fail = () =>
      call(dp.proxyUrl, '/fail', { method: 'POST', body: JSON.stringify({ code: 14, message: 'down' }) });
    for (let i = 0; i < 4; i++) expect((await fail()).status).toBe(503);
    const before = srv.calls.Fail ?? 0;
    const r = await fail();
    expect(r.status).toBe(503);
    expect(r.json.code).toBe('SLC_ERR_UPSTREAM_CIRCUIT_OPEN');
    expect(srv.calls.Fail).toBe(before);
    // Another service's breaker is its own: the shop routes still answer.
    expect((await call(dp.proxyUrl, '/v1/items/1')).status).toBe(200);
  });

  it('application errors (NOT_FOUND) do not count against the service', async () => {
    for (let i = 0; i < 6; i++) expect((await call(dp.proxyUrl, '/v1/items/missing')).status).toBe(404);
    expect((await call(dp.proxyUrl, '/v1/items/1')).status).toBe(200);
  });
});

describe('grpc across configuration swaps', () => {
  it('a new snapshot keeps answering on the channel it already had; a route added works at once', async () => {
    const channels = openChannels();
    expect(channels).toBe(channelsBefore + 1); // two services, one address: one channel
    const next = snapshotOf(resources(rule('echo', '/echo', 'Echo', { body: '*' })));
    const put = await request(`${dp.adminUrl}/config`, {
      method: 'PUT',
      body: JSON.stringify(next),
      headers: { 'content-type': 'application/json', authorization: 'Bearer test-admin-token' },
    });
    expect(put.statusCode).toBe(200);
    await put.body.dump();
    const echo = await call(dp.proxyUrl, '/echo', { method: 'POST', body: '{"itemId":"e"}' });
    expect(echo.status).toBe(200);
    expect(echo.json).toEqual({ itemId: 'e' });
    expect((await call(dp.proxyUrl, '/v1/items/2')).json.itemId).toBe('2');
    expect(openChannels()).toBe(channels);
  });

  it('the door refuses a table whose grpc entry names no method of its protos, naming route and field; the old one stays', async () => {
    const next = snapshotOf(resources());
    const table = structuredClone(next.table);
    const route = table.routes.find((r) => r.handler.type === 'grpc')!;
    (route.handler as { method: string }).method = 'Nope';
    const put = await request(`${dp.adminUrl}/config`, {
      method: 'PUT',
      body: JSON.stringify({ hash: sha256Hex(canonicalJson(table)), table }),
      headers: { 'content-type': 'application/json', authorization: 'Bearer test-admin-token' },
    });
    expect(put.statusCode).toBe(422);
    const body = JSON.stringify(await put.body.json());
    expect(body).toContain(route.id);
    expect(body).toContain('handler.method');
    expect((await call(dp.proxyUrl, '/v1/items/3')).json.itemId).toBe('3');
  });

  it('a data plane closed releases its channels', async () => {
    const before = openChannels();
    const other = await startTestDataPlane({
      initialSnapshot: snapshotOf([
        gatewayRoute('solo', `http://localhost:${srv.port}`, [
          rule('get', '/items', 'GetItem', { pattern: '/items/{item_id}' }),
        ]),
      ]),
    });
    expect((await call(other.proxyUrl, '/items/9')).json.itemId).toBe('9');
    expect(openChannels()).toBe(before + 1);
    await other.close();
    expect(openChannels()).toBe(before);
  });
});
