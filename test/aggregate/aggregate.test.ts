/**
 * The aggregate handler in a real data plane, its route compiled by the real controller, its
 * calls answered by real upstreams on loopback: the merged answer, a slow optional call (null
 * and an errors entry, within its timeout), a slow required call (504 naming it), failing,
 * non-JSON and too large answers, path parameters that stay one segment, GET/HEAD only, a jwt
 * plugin in front, and the per-call metric.
 */
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DataPlane } from '../../dataplane/main.ts';
import { hsJwt, hsJwtResources } from '../helpers/hs-jwt.ts';
import { freePort, startTestDataPlane, startUpstream, type Upstream } from '../helpers/servers.ts';
import { headerSafe, SAFE_PATH_VALUES, UNSAFE_PATH_VALUES } from '../helpers/unsafe-path-values.ts';
import { gatewayRoute, snapshotOf } from './helpers.ts';

let up: Upstream;
let dp: DataPlane;
/** When the upstream saw a /hold/<tag> call cut by the gateway. */
const cutAt = new Map<string, number>();

beforeAll(async () => {
  up = await startUpstream((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    const slow = /^\/slow\/(\d+)$/.exec(path);
    const json = (status: number, body: unknown) => {
      const text = JSON.stringify(body);
      res.writeHead(status, {
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(text),
      });
      res.end(text);
    };
    const hold = /^\/hold\/(\w+)$/.exec(path);
    if (slow) {
      const t = setTimeout(() => json(200, { late: true }), Number(slow[1]));
      res.on('close', () => clearTimeout(t));
    } else if (hold) {
      // Answers after 3 s; when its caller cuts it first, the time of that is kept.
      const t = setTimeout(() => json(200, { late: true }), 3000);
      res.on('close', () => {
        clearTimeout(t);
        if (!res.writableEnded) cutAt.set(hold[1], Date.now());
      });
    } else if (path === '/fail') {
      res.writeHead(500, { 'content-type': 'application/json' }).end('{"secret":"upstream stack trace"}');
    } else if (path === '/text') res.writeHead(200, { 'content-type': 'text/plain' }).end('hello');
    else if (path === '/bad-json') res.writeHead(200, { 'content-type': 'application/json' }).end('{"a":');
    else if (path === '/big') json(200, { blob: 'x'.repeat(5000) });
    else return false; // the echo: {method, url, headers, body}
    return true;
  });
  const dead = `http://127.0.0.1:${await freePort()}`;
  const call = (name: string, path: string, extra: Record<string, unknown> = {}) => ({
    name,
    url: up.url,
    path,
    ...extra,
  });
  const rule = (name: string, aggregate: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
    name,
    paths: [`/${name}`],
    aggregate: { pattern: `/${name}/{id}`, ...aggregate },
    ...extra,
  });
  const snapshot = snapshotOf([
    gatewayRoute('agg', [
      rule('profile', {
        calls: [
          call('user', '/users/{{ path.id }}'),
          call('orders', '/users/{{ path.id }}/orders'),
          call('preferences', '/users/{{ path.id }}/preferences', { required: false }),
        ],
      }),
      rule('slow-optional', {
        timeout: '2s',
        calls: [
          call('user', '/users/{{ path.id }}'),
          call('preferences', '/slow/3000', { timeout: '150ms', required: false }),
        ],
      }),
      rule('slow-required', {
        calls: [
          call('user', '/slow/3000', { timeout: '150ms' }),
          call('orders', '/users/{{ path.id }}/orders', { required: false }),
        ],
      }),
      rule('overall', {
        timeout: '200ms',
        calls: [call('user', '/users/{{ path.id }}'), call('later', '/slow/3000', { required: false })],
      }),
      rule('failing', {
        calls: [
          call('user', '/users/{{ path.id }}'),
          call('status', '/fail', { required: false }),
          call('text', '/text', { required: false }),
          call('badjson', '/bad-json', { required: false }),
          { name: 'down', url: dead, path: '/x', required: false },
        ],
      }),
      rule('required-fails', { calls: [call('user', '/users/{{ path.id }}'), call('orders', '/fail')] }),
      rule('cut', {
        calls: [call('held', '/hold/cut', { timeout: '2s', required: false }), call('orders', '/fail')],
      }),
      rule('big', {
        maxBodyBytes: 2000,
        calls: [call('user', '/users/{{ path.id }}'), call('big', '/big', { required: false })],
      }),
      rule('segments', {
        calls: [
          call('byPath', '/users/{{ path.id }}/orders'),
          call('byHeader', '/h/{{ header.x-user }}'),
          call('byQuery', '/q/{{ query.id }}'),
        ],
      }),
      rule('secure', { calls: [call('user', '/users/{{ path.id }}')] }, { plugins: [{ name: 'jwt' }] }),
    ]),
    ...hsJwtResources('test', 'profile'),
  ]);
  dp = await startTestDataPlane({ initialSnapshot: snapshot });
});

afterAll(async () => {
  await dp?.close();
  await up?.close();
});

async function get(
  path: string,
  opts: { method?: 'GET' | 'HEAD' | 'POST'; headers?: Record<string, string> } = {},
) {
  const started = Date.now();
  const r = await request(`${dp.proxyUrl}${path}`, { method: opts.method ?? 'GET', headers: opts.headers });
  const text = await r.body.text();
  return {
    status: r.statusCode,
    headers: r.headers,
    text,
    json: text && JSON.parse(text),
    ms: Date.now() - started,
  };
}

const seenSince = (n: number) => up.seen.slice(n).map((s) => s.url);

describe('aggregate', () => {
  it('answers one JSON object with a member per call, in the route order, calls made in parallel', async () => {
    const before = up.seen.length;
    const r = await get('/profile/42', { headers: { 'x-custom': 'kept', 'accept-encoding': 'gzip' } });
    expect(r.status).toBe(200);
    expect(r.headers['content-type']).toBe('application/json');
    expect(Object.keys(r.json)).toEqual(['user', 'orders', 'preferences']);
    expect(r.json.user).toMatchObject({ method: 'GET', url: '/users/42' });
    expect(r.json.orders).toMatchObject({ url: '/users/42/orders' });
    expect(r.json.preferences).toMatchObject({ url: '/users/42/preferences' });
    // The client's headers go along, but not those that would change the answer's encoding.
    expect(r.json.user.headers).toMatchObject({ 'x-custom': 'kept', accept: 'application/json' });
    expect(r.json.user.headers['accept-encoding']).toBeUndefined();
    expect(seenSince(before).sort()).toEqual(['/users/42', '/users/42/orders', '/users/42/preferences']);
  });

  it('a slow optional call: answered within its timeout, its member null and listed in errors', async () => {
    const r = await get('/slow-optional/7');
    expect(r.status).toBe(200);
    expect(r.ms).toBeLessThan(1500);
    expect(r.json.user).toMatchObject({ url: '/users/7' });
    expect(r.json.preferences).toBeNull();
    expect(r.json.errors).toEqual([
      { call: 'preferences', code: 'SLC_ERR_UPSTREAM_TIMEOUT', title: 'The upstream did not answer in time' },
    ]);
  });

  it('a slow required call: 504 problem naming the call, without waiting for the upstream', async () => {
    const r = await get('/slow-required/7');
    expect(r.status).toBe(504);
    expect(r.ms).toBeLessThan(1500);
    expect(r.headers['content-type']).toBe('application/problem+json');
    expect(r.json).toMatchObject({
      status: 504,
      code: 'SLC_ERR_AGGREGATE_CALL_TIMEOUT',
      call: 'user',
      errors: [{ call: 'user', code: 'SLC_ERR_UPSTREAM_TIMEOUT' }],
    });
    expect(r.json.detail).toContain('"user"');
    expect(r.json.requestId).toBe(r.headers['x-request-id']);
  });

  it('the overall deadline bounds calls that set no timeout of their own', async () => {
    const r = await get('/overall/1');
    expect(r.status).toBe(200);
    expect(r.ms).toBeLessThan(1500);
    expect(r.json.later).toBeNull();
    expect(r.json.errors).toMatchObject([{ call: 'later', code: 'SLC_ERR_UPSTREAM_TIMEOUT' }]);
  });

  it('failing optional calls: a status, a non-JSON or broken JSON answer, no connection; no upstream body leaks', async () => {
    const r = await get('/failing/1');
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({
      user: { url: '/users/1' },
      status: null,
      text: null,
      badjson: null,
      down: null,
    });
    expect(r.json.errors).toEqual([
      {
        call: 'status',
        code: 'SLC_ERR_AGGREGATE_CALL_STATUS',
        title: 'The backend call answered with an error status',
        upstreamStatus: 500,
      },
      {
        call: 'text',
        code: 'SLC_ERR_AGGREGATE_NOT_JSON',
        title: 'The backend call did not answer with JSON',
        upstreamStatus: 200,
      },
      {
        call: 'badjson',
        code: 'SLC_ERR_AGGREGATE_NOT_JSON',
        title: 'The backend call did not answer with JSON',
        upstreamStatus: 200,
      },
      { call: 'down', code: 'SLC_ERR_UPSTREAM_UNAVAILABLE', title: 'The upstream could not be reached' },
    ]);
    expect(r.text).not.toContain('upstream stack trace');
    expect(r.text).not.toContain('hello');
  });

  it('a failing required call: 502 problem naming it, with no upstream body', async () => {
    const r = await get('/required-fails/1');
    expect(r.status).toBe(502);
    expect(r.json).toMatchObject({
      code: 'SLC_ERR_AGGREGATE_CALL_FAILED',
      call: 'orders',
      errors: [{ call: 'orders', code: 'SLC_ERR_AGGREGATE_CALL_STATUS', upstreamStatus: 500 }],
    });
    expect(r.text).not.toContain('upstream stack trace');
  });

  it('a failed required call answers at once and cuts the calls still under way', async () => {
    const r = await get('/cut/1');
    const answered = Date.now();
    expect(r.status).toBe(502);
    expect(r.json).toMatchObject({ code: 'SLC_ERR_AGGREGATE_CALL_FAILED', call: 'orders' });
    for (let i = 0; i < 100 && !cutAt.has('cut'); i++) await new Promise((w) => setTimeout(w, 10));
    // Not left to run to its own 2 s timeout: cut when the answer went.
    expect(cutAt.get('cut')! - answered).toBeLessThan(500);
  });

  it('bounds the bytes kept: a call past maxBodyBytes fails as too large', async () => {
    const r = await get('/big/1');
    expect(r.status).toBe(200);
    expect(r.json.big).toBeNull();
    expect(r.json.errors).toMatchObject([{ call: 'big', code: 'SLC_ERR_AGGREGATE_TOO_LARGE' }]);
    expect(r.text.length).toBeLessThan(2000);
  });

  it('a parameter stays one segment: sub-delimiters in the path, a header or the query', async () => {
    const before = up.seen.length;
    const r = await get('/segments/a%20b@c:d=e&f?id=x%3Dy%26z', { headers: { 'x-user': 'a b@c' } });
    expect(r.status).toBe(200);
    expect(r.json.byPath.url).toBe('/users/a%20b%40c%3Ad%3De%26f/orders');
    expect(r.json.byHeader.url).toBe('/h/a%20b%40c');
    expect(r.json.byQuery.url).toBe('/q/x%3Dy%26z');
    expect(seenSince(before).sort()).toEqual([
      '/h/a%20b%40c',
      '/q/x%3Dy%26z',
      '/users/a%20b%40c%3Ad%3De%26f/orders',
    ]);
    for (const v of SAFE_PATH_VALUES) {
      const ok = await get(`/segments/1?id=${encodeURIComponent(v)}`);
      expect(ok.status, v).toBe(200);
      expect(decodeURIComponent(ok.json.byQuery.url.slice('/q/'.length))).toBe(v);
    }
  });

  it('a dot segment or a separator from the request, in any encoding, is a 400 before any call', async () => {
    const before = up.seen.length;
    const refused = async (path: string, headers: Record<string, string> = {}) => {
      const r = await get(path, { headers });
      expect(r.status, `${path} ${JSON.stringify(headers)}`).toBe(400);
      expect(r.headers['content-type']).toBe('application/problem+json');
      expect(r.json.code).toBe('SLC_ERR_BAD_PATH_VALUE');
    };
    for (const v of UNSAFE_PATH_VALUES) {
      await refused(`/segments/1?id=${encodeURIComponent(v)}`);
      if (headerSafe(v)) await refused('/segments/1?id=ok', { 'x-user': v });
    }
    // Only the query's own escapes: "%2e%2e" and "%2F" reach the value as ".." and "/".
    await refused('/segments/1?id=%2e%2e');
    await refused('/segments/1?id=%2F');
    await refused('/segments/1?id=%252e%252e');
    expect(up.seen.length).toBe(before);

    // In the path itself the ingress has already refused them, or resolved the dots away.
    for (const path of ['/segments/..%2Fadmin', '/segments/a%3Fb', '/segments/%252F', '/segments/..%3B']) {
      const r = await get(path);
      expect(r.status).toBe(400);
      expect(r.json.code).toBe('SLC_ERR_BAD_PATH');
    }
    expect((await get('/segments/%2e%2e')).status).toBe(404);
    expect(up.seen.length).toBe(before);
  });

  it('serves GET and HEAD only; a path outside the pattern is 404', async () => {
    const head = await get('/profile/42', { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.text).toBe('');
    expect(Number(head.headers['content-length'])).toBeGreaterThan(0);
    const before = up.seen.length;
    const post = await get('/profile/42', { method: 'POST' });
    expect(post.status).toBe(405);
    expect(post.json.code).toBe('SLC_ERR_METHOD_NOT_ALLOWED');
    const outside = await get('/profile/42/more');
    expect(outside.status).toBe(404);
    expect(outside.json.code).toBe('SLC_ERR_ROUTE_NOT_FOUND');
    expect(up.seen.length).toBe(before);
  });

  it('a jwt plugin in front: no token is 401 and no call is made; a valid token gets the aggregate', async () => {
    const before = up.seen.length;
    const refused = await get('/secure/5');
    expect(refused.status).toBe(401);
    expect(up.seen.length).toBe(before);
    const token = await hsJwt('profile');
    const ok = await get('/secure/5', { headers: { authorization: `Bearer ${token}` } });
    expect(ok.status).toBe(200);
    expect(ok.json.user).toMatchObject({ url: '/users/5' });
  });

  it('counts each call by route and call name', async () => {
    await get('/slow-optional/8');
    const text = await dp.metrics.registry.metrics();
    const route = 'route/test/agg/slow-optional/0';
    expect(text).toMatch(
      new RegExp(`sluice_aggregate_call_seconds_count\\{route="${route}",call="user",result="ok"\\} [1-9]`),
    );
    expect(text).toMatch(
      new RegExp(
        `sluice_aggregate_call_seconds_count\\{route="${route}",call="preferences",result="timeout"\\} [1-9]`,
      ),
    );
  });
});
