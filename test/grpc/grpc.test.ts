/**
 * The grpc handler in a real data plane, its routes compiled by the real controller, answered by
 * a real @grpc/grpc-js server on loopback (server.ts): proto3 JSON both ways (nested messages,
 * enums, int64, bytes, repeated, maps), path + query + body mapping, path templates (variables
 * over several segments, nested fields, "**", custom verbs), the google.api.http annotation, every gRPC status mapped, the deadline, bad bodies refused with no call made,
 * metadata both ways, an unreachable service.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DataPlane } from '../../dataplane/main.ts';
import { httpOfGrpc } from '../../dataplane/handlers/grpc/status.ts';
import { freePort, startTestDataPlane } from '../helpers/servers.ts';
import { call, gatewayRoute, rule, snapshotOf } from './helpers.ts';
import { startGrpcServer, type TestGrpcServer } from './server.ts';

let srv: TestGrpcServer;
let dp: DataPlane;
const get = (path: string, opts?: Parameters<typeof call>[2]) => call(dp.proxyUrl, path, opts);

beforeAll(async () => {
  srv = await startGrpcServer();
  const dead = `http://127.0.0.1:${await freePort()}`;
  dp = await startTestDataPlane({
    initialSnapshot: snapshotOf([
      gatewayRoute('catalog', srv.url, [
        rule('get', '/items', 'GetItem', { pattern: '/items/{item_id}' }),
        rule('echo', '/echo', 'Echo', {
          pattern: '/echo/{item_id}',
          body: 'page',
          requestHeaders: ['x-tenant', 'x-absent'],
          responseHeaders: ['x-served-by', 'x-cost'],
        }),
        rule('echo-all', '/echo-all', 'Echo', { body: '*' }, { methods: ['POST'] }),
        rule('event', '/event', 'EchoEvent', { body: '*' }),
        rule('annotated', '/v1/items', 'GetItem', { annotation: true }),
        rule('annotated-create', '/v1/shelves', 'CreateItem', { annotation: true }),
        rule('names', '/v2', 'Echo', { pattern: '/v2/{item_id=shelves/*/books/*}' }),
        rule('bindings', '/v5', 'Lookup', { annotation: true }),
        rule('nested', '/v3', 'Echo', { pattern: '/v3/{item_id}/pages/{page.token}' }),
        rule('verb', '/v4', 'Echo', { pattern: '/v4/{item_id=**}:watch' }),
        rule('fail', '/fail', 'Fail', { body: '*' }),
        rule('slow', '/slow', 'Slow', { body: '*', timeout: '1s' }),
      ]),
      gatewayRoute('down', dead, [rule('down', '/down', 'GetItem', { pattern: '/down/{item_id}' })]),
    ]),
  });
});

afterAll(async () => {
  await dp?.close();
  await srv?.close();
});

describe('grpc: JSON ↔ protobuf', () => {
  it('answers a unary call as proto3 JSON: nested messages, enums, int64 as strings, bytes base64, repeated, maps', async () => {
    const r = await get('/items/mug-1?with_tags=true');
    expect(r.status).toBe(200);
    expect(r.headers['content-type']).toBe('application/json');
    expect(r.json).toEqual({
      itemId: 'mug-1',
      displayName: 'Blue mug',
      price: { currencyCode: 'EUR', units: '9007199254740993' },
      color: 'GREEN',
      tags: ['kitchen', 'blue'],
      thumbnail: Buffer.from([0, 1, 2, 250, 251, 255]).toString('base64'),
      stockCount: '-12',
      counts: { a: 1, b: 2 },
      onSale: true,
      weight: 0.25,
      history: [
        { currencyCode: 'EUR', units: '10' },
        { currencyCode: 'USD', units: '11' },
      ],
    });
  });

  it('fields at their defaults are left out (proto3 JSON), an empty repeated field too', async () => {
    const r = await get('/items/mug-2');
    expect(r.status).toBe(200);
    expect(r.json.tags).toBeUndefined();
    expect(r.json.itemId).toBe('mug-2');
  });

  it('maps the path parameter, the query (proto and JSON names, dotted paths, repeated) and a body field', async () => {
    const r = await get('/echo/abc?withTags=true&color=RED&fields=a&fields=b&version=18446744073709551615', {
      method: 'POST',
      body: JSON.stringify({ size: 25, token: 't' }),
    });
    expect(r.status).toBe(200);
    expect(r.json).toEqual({
      itemId: 'abc',
      withTags: true,
      color: 'RED',
      fields: ['a', 'b'],
      version: '18446744073709551615',
      page: { size: 25, token: 't' },
    });
    const q = await get('/echo/x?page.size=3&with_tags=false');
    expect(q.json).toEqual({ itemId: 'x', page: { size: 3 } });
  });

  it('a body "*" is the whole message, by proto, lowerCamelCase or json_name names, enums by number, int64 by number', async () => {
    const r = await get('/echo-all', {
      method: 'POST',
      body: JSON.stringify({
        item_id: 'i',
        withTags: true,
        color: 2,
        version: 7,
        page: { size: 1, next: 'c' },
      }),
    });
    expect(r.status).toBe(200);
    // cursor has json_name "next": that is its name both ways.
    expect(r.json).toEqual({
      itemId: 'i',
      withTags: true,
      color: 'GREEN',
      version: '7',
      page: { size: 1, next: 'c' },
    });
  });

  it('the google.api.http annotation maps verb, path and body', async () => {
    const r = await get('/v1/items/42');
    expect(r.status).toBe(200);
    expect(r.json.itemId).toBe('42');
    const c = await get('/v1/shelves/top/items', {
      method: 'POST',
      body: JSON.stringify({ displayName: 'Cup', tags: ['x'], price: { units: '5' } }),
    });
    expect(c.status).toBe(200);
    expect(c.json).toEqual({ itemId: 'top/Cup', displayName: 'Cup', tags: ['x'], price: { units: '5' } });
    // Another verb than the annotation's, or a path outside its template.
    expect((await get('/v1/items/42', { method: 'DELETE' })).status).toBe(405);
    expect((await get('/v1/items/42/more')).status).toBe(404);
  });

  it('path templates: a variable over several segments, a nested field, "**" and a custom verb', async () => {
    const names = await get('/v2/shelves/s1/books/b%201');
    expect(names.status).toBe(200);
    expect(names.json).toEqual({ itemId: 'shelves/s1/books/b 1' });
    expect((await get('/v2/shelves/s1')).status).toBe(404);
    expect((await get('/v2/racks/s1/books/b1')).status).toBe(404);
    // The path sets page.token; the query sets page.size beside it.
    const nested = await get('/v3/i/pages/tok?page.size=3');
    expect(nested.json).toEqual({ itemId: 'i', page: { size: 3, token: 'tok' } });
    const verb = await get('/v4/a/b/c:watch');
    expect(verb.json).toEqual({ itemId: 'a/b/c' });
    expect((await get('/v4/a/b/c')).status).toBe(404);
  });

  it("the annotation's additional bindings: each its own method, path and body, tried in order", async () => {
    expect((await get('/v5/items/7')).json).toEqual({ itemId: '7' });
    expect((await get('/v5/shelves/s/items/7')).json).toEqual({ itemId: 'shelves/s/items/7' });
    const post = await get('/v5/items:lookup', {
      method: 'POST',
      body: JSON.stringify({ itemId: 'x', version: '3' }),
    });
    expect(post.json).toEqual({ itemId: 'x', version: '3' });
    // A path one binding fits, with another method: 405; a path none fits: 404.
    expect((await get('/v5/items:lookup')).status).toBe(405);
    expect((await get('/v5/shelves/s/items/7', { method: 'POST', body: '{}' })).status).toBe(405);
    expect((await get('/v5/other')).status).toBe(404);
  });
});

describe('grpc: bad requests never reach the service', () => {
  const bad: [string, string, Record<string, unknown> | null][] = [
    ['malformed JSON', '{"size": ', null],
    ['an unknown field', JSON.stringify({ size: 1, nope: true }), { field: 'page.nope' }],
    ['a string for an int32', JSON.stringify({ size: 'ten' }), { field: 'page.size' }],
    ['an object for a string', JSON.stringify({ token: {} }), { field: 'page.token' }],
    ['an int32 out of range', JSON.stringify({ size: 2 ** 31 }), { field: 'page.size' }],
    ['a fraction for an int32', JSON.stringify({ size: 1.5 }), { field: 'page.size' }],
    ['an array for the message', '[1]', { field: 'page' }],
  ];
  for (const [what, body, extra] of bad)
    it(`${what}: 400 problem naming it, zero calls`, async () => {
      const before = srv.calls.Echo ?? 0;
      const r = await get('/echo/abc', { method: 'POST', body });
      expect(r.status).toBe(400);
      expect(r.headers['content-type']).toBe('application/problem+json');
      expect(r.json).toMatchObject({ code: 'SLC_ERR_BAD_REQUEST', status: 400, ...extra });
      expect(srv.calls.Echo ?? 0).toBe(before);
    });

  // JSON.parse keeps the last of two equal keys, a service's parser may keep the first: refused, at any depth.
  const duplicates: [string, string, string, string][] = [
    ['/echo-all', '{"item_id":"a","item_id":"b"}', 'item_id', 'item_id'],
    ['/echo-all', '{"item_id":"a","\\u0069tem_id":"b"}', 'item_id', 'item_id'],
    ['/echo-all', '{"page":{"size":1,"token":"t","size":2}}', 'size', 'page.size'],
    ['/echo/abc', '{"size":1,"size":1}', 'size', 'page.size'], // the body is one field: its path under it
    ['/event', '{"meta":{"a":{"b":[{"c":1},{"c":1,"c":2}]}}}', 'c', 'meta.a.b[1].c'],
    ['/event', '{"meta":{"x":1},"note":"n","meta":{"x":2}}', 'meta', 'meta'],
  ];
  for (const [path, body, key, field] of duplicates)
    it(`a duplicate key ${body}: 400 naming ${field}, zero calls`, async () => {
      const before = srv.calls.Echo ?? 0;
      const beforeEvent = srv.calls.EchoEvent ?? 0;
      const r = await get(path, { method: 'POST', body });
      expect(r.status).toBe(400);
      expect(r.headers['content-type']).toBe('application/problem+json');
      expect(r.json).toMatchObject({ code: 'SLC_ERR_JSON_DUPLICATE_KEY', status: 400, field });
      expect(r.json.detail).toBe(`${field}: the key ${JSON.stringify(key)} is given twice`);
      expect(srv.calls.Echo ?? 0).toBe(before);
      expect(srv.calls.EchoEvent ?? 0).toBe(beforeEvent);
    });

  it('equal keys in different objects, and equal strings, are not duplicates', async () => {
    const r = await get('/event', {
      method: 'POST',
      body: '{"meta":{"a":{"c":1},"b":{"c":1},"s":"c,c"},"list":[{"c":1},{"c":2}]}',
    });
    expect(r.status).toBe(200);
  });

  it('query and path values are held to their field types too', async () => {
    const before = srv.calls.Echo ?? 0;
    for (const q of [
      'withTags=yes',
      'color=BLUE',
      'version=-1',
      'page=1',
      'unknown=1',
      'color=RED&color=GREEN',
    ]) {
      const r = await get(`/echo/abc?${q}`);
      expect(r.status, q).toBe(400);
      expect(r.json.code).toBe('SLC_ERR_BAD_REQUEST');
    }
    const bytes = await get('/echo-all', { method: 'POST', body: JSON.stringify({ item_id: 1 }) });
    expect(bytes.status).toBe(400);
    expect(srv.calls.Echo ?? 0).toBe(before);
  });
});

describe('grpc: statuses', () => {
  const expected: Record<string, number> = {
    CANCELLED: 499,
    UNKNOWN: 500,
    INVALID_ARGUMENT: 400,
    DEADLINE_EXCEEDED: 504,
    NOT_FOUND: 404,
    ALREADY_EXISTS: 409,
    PERMISSION_DENIED: 403,
    RESOURCE_EXHAUSTED: 429,
    FAILED_PRECONDITION: 400,
    ABORTED: 409,
    OUT_OF_RANGE: 400,
    UNIMPLEMENTED: 501,
    INTERNAL: 500,
    UNAVAILABLE: 503,
    DATA_LOSS: 500,
    UNAUTHENTICATED: 401,
  };
  it('the table: OK 200 and every error code', () => {
    expect(httpOfGrpc(0)).toEqual({ name: 'OK', status: 200 });
    for (let code = 1; code <= 16; code++)
      expect(httpOfGrpc(code).status).toBe(expected[httpOfGrpc(code).name]);
    expect(httpOfGrpc(99)).toEqual({ name: 'UNKNOWN', status: 500 });
  });

  for (let code = 1; code <= 16; code++)
    it(`the service answers ${httpOfGrpc(code).name}: ${httpOfGrpc(code).status} with a problem naming it`, async () => {
      const r = await get('/fail', {
        method: 'POST',
        body: JSON.stringify({ code, message: `told to fail ${code}` }),
      });
      const name = httpOfGrpc(code).name;
      expect(r.status).toBe(expected[name]);
      expect(r.headers['content-type']).toBe('application/problem+json');
      expect(r.json).toMatchObject({ code: 'SLC_ERR_GRPC_STATUS', status: expected[name], grpcStatus: name });
      // The service's message, except for statuses grpc-js also makes itself (their text is the gateway's).
      if (![1, 4, 14].includes(code)) expect(r.json.detail).toBe(`told to fail ${code}`);
      expect(r.json.requestId).toBe(r.headers['x-request-id']);
      expect(r.text).not.toMatch(/stack|at .*\.ts/);
    });

  it('NOT_FOUND from a real lookup', async () => {
    const r = await get('/items/missing');
    expect(r.status).toBe(404);
    expect(r.json).toMatchObject({ grpcStatus: 'NOT_FOUND', detail: 'no item "missing"' });
  });

  it('the deadline (the route timeout): 504, the call cancelled on the service', async () => {
    const started = Date.now();
    const r = await get('/slow', { method: 'POST', body: JSON.stringify({ ms: 8000 }) });
    expect(r.status).toBe(504);
    expect(r.json).toMatchObject({ code: 'SLC_ERR_GRPC_STATUS', grpcStatus: 'DEADLINE_EXCEEDED' });
    expect(Date.now() - started).toBeLessThan(6000);
    for (let i = 0; i < 100 && !srv.cancelled.Slow; i++)
      await new Promise((resolve) => setTimeout(resolve, 20));
    expect(srv.cancelled.Slow).toBe(1);
    // Within the deadline, the same route answers.
    const ok = await get('/slow', { method: 'POST', body: JSON.stringify({ ms: 1 }) });
    expect(ok.status).toBe(200);
    expect(ok.json).toEqual({});
  });

  it('an unreachable service: 503 UNAVAILABLE, no address in the answer', async () => {
    const r = await get('/down/x');
    expect(r.status).toBe(503);
    expect(r.json).toMatchObject({ grpcStatus: 'UNAVAILABLE', detail: 'the gRPC service is unavailable' });
    expect(r.text).not.toContain('127.0.0.1');
  });
});

describe('grpc: metadata', () => {
  it('listed request headers go as metadata (and the request id); listed metadata and trailers come back', async () => {
    const r = await get('/echo/m', {
      method: 'POST',
      headers: { 'x-tenant': 'acme', 'x-other': 'no', authorization: 'Bearer t' },
      body: '{}',
    });
    expect(r.status).toBe(200);
    const md = srv.metadata.Echo.getMap();
    expect(md['x-tenant']).toBe('acme');
    expect(md['x-request-id']).toBe(r.headers['x-request-id']);
    expect(md['x-other']).toBeUndefined();
    expect(md.authorization).toBeUndefined();
    expect(r.headers['x-served-by']).toBe('catalog-1');
    expect(r.headers['x-cost']).toBe('acme');
    expect(r.headers['x-secret']).toBeUndefined();
  });
});

describe('grpc: edges', () => {
  it('a header value gRPC metadata cannot carry: 400 SLC_ERR_BAD_HEADER, no call', async () => {
    const before = srv.calls.Echo ?? 0;
    const r = await get('/echo/m', { method: 'POST', headers: { 'x-tenant': 'caf\u00e9' }, body: '{}' });
    expect(r.status).toBe(400);
    expect(r.json.code).toBe('SLC_ERR_BAD_HEADER');
    expect(srv.calls.Echo ?? 0).toBe(before);
  });

  it('a body on a route that takes none: 400, no call', async () => {
    const before = srv.calls.GetItem ?? 0;
    const r = await get('/items/x', { method: 'POST', body: '{"itemId":"y"}' });
    expect(r.status).toBe(400);
    expect(r.json.detail).toBe('the body: this route takes no body');
    expect(srv.calls.GetItem ?? 0).toBe(before);
  });

  it('each call is timed in sluice_upstream_response_seconds under the service upstream', async () => {
    await get('/items/metric');
    const text = await dp.metrics.registry.metrics();
    const count =
      /sluice_upstream_response_seconds_count\{upstream="upstream\/test\/catalog\/[0-9a-f]+"\} (\d+)/;
    expect(Number(count.exec(text)?.[1] ?? 0)).toBeGreaterThan(0);
  });
});

describe('grpc: well-known types in their JSON forms', () => {
  it('Timestamp, Duration, wrappers, FieldMask, Struct, Value, ListValue, Empty round-trip', async () => {
    const event = {
      at: '2024-02-29T23:59:59.123456789Z',
      took: '-1.500s', // 0, 3, 6 or 9 fractional digits
      count: '9007199254740993',
      note: '',
      mask: 'displayName,price.currencyCode',
      meta: { a: 1, b: [true, null, 'x'], c: { d: null } },
      anyValue: null,
      list: [1, 'two', { three: 3 }],
      flag: false,
      nothing: {},
      history: ['1970-01-01T00:00:00Z', '2024-01-01T10:00:00.500Z'],
    };
    const r = await get('/event', { method: 'POST', body: JSON.stringify(event) });
    expect(r.status).toBe(200);
    expect(r.json).toEqual(event);
    // An offset is normalized to UTC, a whole second has no fraction.
    const z = await get('/event', {
      method: 'POST',
      body: JSON.stringify({ at: '2024-03-01T01:00:00+02:00', took: '3s' }),
    });
    expect(z.json).toEqual({ at: '2024-02-29T23:00:00Z', took: '3s' });
  });

  it('a malformed timestamp, duration or wrapper value: 400 naming it, no call', async () => {
    const before = srv.calls.EchoEvent ?? 0;
    for (const [body, field] of [
      [{ at: '2024-02-30T00:00:00Z' }, 'at'],
      [{ at: 1700000000 }, 'at'],
      [{ took: '5m' }, 'took'],
      [{ count: 'many' }, 'count'],
      [{ flag: 'yes' }, 'flag'],
      [{ meta: [1] }, 'meta'],
      [{ history: ['now'] }, 'history[0]'],
    ] as const) {
      const r = await get('/event', { method: 'POST', body: JSON.stringify(body) });
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.json.field).toBe(field);
    }
    expect(srv.calls.EchoEvent ?? 0).toBe(before);
  });
});
