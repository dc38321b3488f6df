/**
 * response-transformer over real HTTP: a real upstream answers JSON (with and without
 * Content-Length), text, gzip, arrays and oversize bodies; undici reads what the gateway sends.
 * Headers take every verb; JSON bodies are edited with a correct Content-Length; the rest passes
 * untouched and is counted; an idempotency replay returns the transformed response.
 */
import { randomUUID } from 'node:crypto';
import { gunzipSync, gzipSync } from 'node:zlib';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PluginInstance } from '../../dataplane/config/route-table.ts';
import type { DataPlane } from '../../dataplane/main.ts';
import { metricValue } from '../helpers/processes.ts';
import { startTestDataPlane, startUpstream, type Upstream } from '../helpers/servers.ts';
import { idempotencyPlugin, route, snapshot, upstream } from '../helpers/tables.ts';

let up: Upstream;
let dp: DataPlane;
let executions = 0;

const responseTransformer = (name: string, config: Record<string, unknown>): PluginInstance => ({
  id: `plugin/test/${name}`,
  name: 'response-transformer',
  config,
  source: { kind: 'GatewayPlugin', namespace: 'test', name, generation: 1 },
});

const CONFIG = {
  remove: { headers: ['X-Internal'], body: ['secret', 'deep.hidden'] },
  rename: { headers: ['X-Old:X-New'], body: ['internal.id:id'] },
  replace: { headers: ['Server:sluice'], body: ['status:{{ header.x-status }}', 'absent:never'] },
  add: {
    headers: ['X-Gateway-Version:v1', 'X-Route:{{ route.id }}', 'X-Echo:{{ query.q }}'],
    body: ['meta.route:{{ route.id }}', 'meta.q:{{ query.q }}', 'status:never'],
  },
  append: { headers: ['X-List:b', 'Set-Cookie:gw=1'] },
  maxBodyBytes: 200,
};

const DOC = { secret: 's', deep: { hidden: 1, shown: 2 }, internal: { id: 7 }, status: 'raw' };

beforeAll(async () => {
  up = await startUpstream((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const json = (body: string, extra: Record<string, string | string[]> = {}) =>
      res
        .writeHead(200, {
          'content-type': 'application/json; charset=utf-8',
          'content-length': Buffer.byteLength(body),
          ...extra,
        })
        .end(body);
    switch (url.pathname) {
      case '/t/json':
        json(JSON.stringify(DOC), {
          'x-internal': 'i',
          'x-old': 'o',
          server: 'upstream',
          'x-list': 'a',
          'set-cookie': ['s=1'],
          etag: '"v1"',
        });
        return true;
      case '/t/chunked': {
        res.writeHead(200, { 'content-type': 'application/problem+json' });
        const text = JSON.stringify(DOC);
        res.write(text.slice(0, 10));
        setTimeout(() => res.end(text.slice(10)), 20);
        return true;
      }
      case '/t/big':
        json(JSON.stringify({ secret: 's', pad: 'x'.repeat(300) }));
        return true;
      case '/t/bigchunked': {
        res.writeHead(200, { 'content-type': 'application/json' });
        const text = JSON.stringify({ secret: 's', pad: 'x'.repeat(300) });
        for (let i = 0; i < text.length; i += 50) res.write(text.slice(i, i + 50));
        res.end();
        return true;
      }
      case '/t/text':
        res.writeHead(200, { 'content-type': 'text/plain', etag: '"t1"' }).end('{"secret":"s"}');
        return true;
      case '/t/array':
        json('[{"secret":"s"}]');
        return true;
      case '/t/invalid':
        json('{"secret":');
        return true;
      case '/t/gzip': {
        const body = gzipSync(JSON.stringify(DOC));
        res
          .writeHead(200, {
            'content-type': 'application/json',
            'content-encoding': 'gzip',
            'content-length': body.length,
          })
          .end(body);
        return true;
      }
      case '/t/cut':
        // Headers and half the body, then the connection drops.
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': 100 });
        res.write('{"secret":');
        setTimeout(() => res.socket?.destroy(), 20);
        return true;
      case '/t/empty':
        res.writeHead(204).end();
        return true;
      case '/idem':
        executions++;
        json(JSON.stringify({ ...DOC, execution: executions }));
        return true;
    }
    return false;
  });
  const rt = responseTransformer('rt', CONFIG);
  dp = await startTestDataPlane({
    initialSnapshot: snapshot(
      [
        route('t', 'u', '/t', { plugins: [rt] }),
        // The transformer is listed first: phases, not the list, put its tap before idempotency's record.
        route('idem', 'u', '/idem', { plugins: [rt, idempotencyPlugin('idem')] }),
      ],
      [upstream('u', up.url)],
    ),
  });
});
afterAll(async () => {
  await dp.close();
  await up.close();
});

const get = (path: string, headers: Record<string, string> = {}) =>
  request(`${dp.proxyUrl}${path}`, { headers: { 'x-status': 'done', ...headers } });
const skipped = async (routeName: string, reason: string) =>
  metricValue(await dp.metrics.registry.metrics(), 'sluice_transform_skipped_total', {
    route: `route/test/${routeName}/${routeName}/0`,
    plugin: 'response-transformer',
    reason,
  });
const TRANSFORMED = {
  deep: { shown: 2 },
  internal: {},
  status: 'done',
  id: 7,
  meta: { route: 'route/test/t/t/0', q: '"},"x":{"' },
};

describe('response headers', () => {
  it('remove, rename, replace, add (templates), append (a list stays a list)', async () => {
    const res = await get(`/t/json?q=${encodeURIComponent('"},"x":{"')}`);
    await res.body.dump();
    expect(res.headers['x-internal']).toBeUndefined();
    expect(res.headers['x-old']).toBeUndefined();
    expect(res.headers).toMatchObject({
      'x-new': 'o',
      server: 'sluice',
      'x-gateway-version': 'v1',
      'x-route': 'route/test/t/t/0',
      'x-echo': '"},"x":{"',
      'x-list': 'a, b',
      'set-cookie': ['s=1', 'gw=1'],
    });
  });

  it('a value that would carry CR/LF is left out, counted, and the response still goes', async () => {
    const before = await skipped('t', 'unsafe_header');
    const res = await get('/t/json?q=a%0D%0Ax-evil:%201');
    expect(res.statusCode).toBe(200);
    expect(res.headers['x-echo']).toBeUndefined();
    expect(res.headers['x-evil']).toBeUndefined();
    expect(res.headers['x-gateway-version']).toBe('v1');
    await res.body.dump();
    expect(await skipped('t', 'unsafe_header')).toBe(before + 1);
  });
});

describe('JSON response bodies', () => {
  it('are edited on nested paths, with Content-Length recomputed; values from the request stay strings', async () => {
    const res = await get(`/t/json?q=${encodeURIComponent('"},"x":{"')}`);
    const text = await res.body.text();
    expect(Number(res.headers['content-length'])).toBe(Buffer.byteLength(text));
    expect(JSON.parse(text)).toEqual(TRANSFORMED);
  });

  it("a rewritten body's strong ETag becomes weak; an untouched body keeps its own", async () => {
    const rewritten = await get('/t/json');
    await rewritten.body.text();
    expect(rewritten.headers.etag).toBe('W/"v1"');
    const untouched = await get('/t/text');
    await untouched.body.text();
    expect(untouched.headers.etag).toBe('"t1"');
  });

  it('a body without length (+json type) is buffered and sent with its length', async () => {
    const res = await get(`/t/chunked?q=${encodeURIComponent('"},"x":{"')}`);
    const text = await res.body.text();
    expect(res.headers['transfer-encoding']).toBeUndefined();
    expect(Number(res.headers['content-length'])).toBe(Buffer.byteLength(text));
    expect(JSON.parse(text)).toEqual(TRANSFORMED);
  });

  it('an empty 204 passes as it is', async () => {
    const res = await get('/t/empty');
    expect(res.statusCode).toBe(204);
    expect(await res.body.text()).toBe('');
  });

  it.each([
    ['/t/big', 'too_large'],
    ['/t/bigchunked', 'too_large'],
    ['/t/text', 'not_json'],
    ['/t/array', 'not_object'],
    ['/t/invalid', 'invalid_json'],
  ])('%s passes untouched, counted as %s', async (path, reason) => {
    const direct = await (await request(`${up.url}${path}`)).body.text();
    const before = await skipped('t', reason);
    const res = await get(path);
    const text = await res.body.text();
    expect(text).toBe(direct);
    if (res.headers['content-length'] !== undefined)
      expect(Number(res.headers['content-length'])).toBe(Buffer.byteLength(text));
    expect(await skipped('t', reason)).toBe(before + 1);
  });

  it("an upstream that fails while the body is held gets the gateway's problem, not a cut response", async () => {
    const res = await get('/t/cut');
    expect(res.statusCode).toBe(502);
    expect(res.headers['content-type']).toBe('application/problem+json');
    expect(await res.body.json()).toMatchObject({ code: 'SLC_ERR_UPSTREAM_UNAVAILABLE' });
  });

  it("a HEAD is answered with the upstream's head, nothing buffered", async () => {
    const res = await request(`${dp.proxyUrl}/t/json`, { method: 'HEAD' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-length']).toBe(String(Buffer.byteLength(JSON.stringify(DOC))));
    expect(res.headers['x-gateway-version']).toBe('v1');
    await res.body.dump();
  });

  it('a compressed body passes untouched, counted as encoded', async () => {
    const before = await skipped('t', 'encoded');
    const res = await get('/t/gzip');
    const body = Buffer.from(await res.body.arrayBuffer());
    expect(res.headers['content-encoding']).toBe('gzip');
    expect(Number(res.headers['content-length'])).toBe(body.length);
    expect(JSON.parse(gunzipSync(body).toString())).toEqual(DOC);
    expect(await skipped('t', 'encoded')).toBe(before + 1);
  });
});

describe('with idempotency', () => {
  it('the replay returns the transformed response, byte for byte', async () => {
    const key = `k-${randomUUID()}`;
    const send = () =>
      request(`${dp.proxyUrl}/idem`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          authorization: 'Bearer alice',
          'idempotency-key': key,
          'x-status': 'done',
        },
        body: '{"amount":1}',
      });
    const first = await send();
    const firstText = await first.body.text();
    const replay = await send();
    const replayText = await replay.body.text();
    expect(executions).toBe(1);
    expect(JSON.parse(firstText)).toMatchObject({
      status: 'done',
      id: 7,
      meta: { route: 'route/test/idem/idem/0' },
    });
    expect(JSON.parse(firstText).secret).toBeUndefined();
    expect(replayText).toBe(firstText);
    expect(Number(replay.headers['content-length'])).toBe(Buffer.byteLength(replayText));
    expect(replay.headers['x-gateway-version']).toBe('v1');
  });
});
