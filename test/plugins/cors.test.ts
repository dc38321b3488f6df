/**
 * cors in a data plane over real HTTP (undici), with a real upstream on loopback: preflights
 * answered before authentication and never proxied (allowed: 204 with the Allow-* headers;
 * refused: 403 without them), a plain OPTIONS proxied, actual requests with the origin echoed or
 * `*`, credentials, exposed headers, private network access, no CORS headers for a disallowed
 * origin, `Vary: Origin` on every response of a CORS route (the gateway's own 401, 429, 502 and
 * idempotency replays included), an upstream's own CORS headers replaced by the policy.
 */
import { createHash, randomUUID } from 'node:crypto';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DataPlane } from '../../dataplane/main.ts';
import { rawRequest, statusOf } from '../helpers/raw-http.ts';
import { freePort, startTestDataPlane, startUpstream, type Upstream } from '../helpers/servers.ts';
import { idempotencyPlugin, rateLimitPlugin, route, snapshot, upstream } from '../helpers/tables.ts';

const plugin = (name: string, pluginName: 'cors' | 'key-auth', config: Record<string, unknown>) => ({
  id: `plugin/test/${name}`,
  name: pluginName,
  config,
  source: { kind: 'GatewayPlugin', namespace: 'test', name, generation: 1 },
});
const strict = plugin('strict', 'cors', {
  origins: ['http://app.test', 'https://*.example.com'],
  // Loose on purpose: ".+" would also match two origins joined with ", " (see the two-lines test).
  originRegex: ['https://.+\\.corp\\.test'],
  methods: ['GET', 'POST', 'PUT'],
  credentials: true,
  exposeHeaders: ['X-Total', 'Idempotent-Replayed'],
  maxAge: 600,
  privateNetwork: true,
});
const open = plugin('open', 'cors', { origins: ['*'], allowHeaders: ['Content-Type', 'X-Api-Version'] });
const keyAuth = plugin('keys', 'key-auth', {
  consumers: [
    {
      name: 'alice',
      secretKeyRef: { name: 'k', key: 'a' },
      sha256: createHash('sha256').update('alice-key').digest('hex'),
    },
  ],
});

let up: Upstream;
let dp: DataPlane;

beforeAll(async () => {
  up = await startUpstream((req, res) => {
    if (!req.url?.startsWith('/upcors')) return false;
    // An upstream with its own (looser) CORS answer and its own Vary.
    res.writeHead(200, {
      'access-control-allow-origin': '*',
      'access-control-allow-methods': 'GET, DELETE',
      'access-control-expose-headers': 'X-Secret',
      vary: 'Accept-Encoding',
      'content-length': '2',
    });
    res.end('ok');
    return true;
  });
  const dead = await freePort();
  dp = await startTestDataPlane({
    initialSnapshot: snapshot(
      [
        route('api', 'up', '/api', { plugins: [strict] }),
        route('open', 'up', '/open', { plugins: [open] }),
        route('ok200', 'up', '/ok200', {
          plugins: [plugin('ok200', 'cors', { origins: ['*'], methods: ['*'], preflightStatus: 200 })],
        }),
        // key-auth listed first: cors still runs first (its phase), so preflights need no key.
        route('auth', 'up', '/auth', { plugins: [keyAuth, strict] }),
        route('limited', 'up', '/limited', {
          plugins: [rateLimitPlugin('one', { minute: 1, policy: 'local', limitBy: 'ip' }), strict],
        }),
        route('idem', 'up', '/idem', { plugins: [strict, idempotencyPlugin('idem')] }),
        route('dead', 'dead', '/dead', { plugins: [strict] }),
        route('upcors', 'up', '/upcors', { plugins: [strict] }),
        route('plain', 'up', '/plain'),
        // Routes that list their methods without OPTIONS: a preflight matches by the method it asks about.
        route('posts', 'up', '/posts', {
          plugins: [strict],
          match: { path: { type: 'Prefix', value: '/posts' }, methods: ['POST'] },
        }),
        route('nocors', 'up', '/nocors', {
          match: { path: { type: 'Prefix', value: '/nocors' }, methods: ['POST'] },
        }),
      ],
      [upstream('up', up.url), upstream('dead', `http://127.0.0.1:${dead}`, { connectMs: 500 })],
    ),
  });
});
afterAll(async () => {
  await dp.close();
  await up.close();
});

const send = async (path: string, method: string, headers: Record<string, string> = {}, body?: string) => {
  const r = await request(`${dp.proxyUrl}${path}`, { method: method as 'GET', headers, body });
  const text = await r.body.text();
  return { status: r.statusCode, headers: r.headers, text };
};
const preflight = (path: string, origin: string, method: string, extra: Record<string, string> = {}) =>
  send(path, 'OPTIONS', { origin, 'access-control-request-method': method, ...extra });
/** The access-control-* headers of a response. */
const corsHeaders = (headers: Record<string, unknown>) =>
  Object.fromEntries(Object.entries(headers).filter(([k]) => k.startsWith('access-control-')));
const upstreamSaw = (method: string, path: string) =>
  up.seen.filter((s) => s.method === method && s.url.startsWith(path)).length;

describe('cors preflight', () => {
  it('answers an allowed preflight with 204 and the Allow-* headers, without calling the upstream', async () => {
    const r = await preflight('/api/items', 'http://app.test', 'PUT', {
      'access-control-request-headers': 'content-type,x-trace',
    });
    expect(r.status).toBe(204);
    expect(corsHeaders(r.headers)).toEqual({
      'access-control-allow-origin': 'http://app.test',
      'access-control-allow-methods': 'GET, POST, PUT',
      'access-control-allow-headers': 'content-type, x-trace',
      'access-control-allow-credentials': 'true',
      'access-control-expose-headers': 'X-Total, Idempotent-Replayed',
      'access-control-max-age': '600',
    });
    expect(r.headers.vary).toBe(
      'Origin, Access-Control-Request-Method, Access-Control-Request-Headers, Access-Control-Request-Private-Network',
    );
    expect(r.headers['x-request-id']).toBeTruthy();
    expect(upstreamSaw('OPTIONS', '/api/items')).toBe(0);
  });

  it('answers 200 with an empty body when preflightStatus says so; methods "*" answers the method asked for', async () => {
    const r = await preflight('/ok200/x', 'http://app.test', 'PURGE');
    expect([r.status, r.text, r.headers['content-length']]).toEqual([200, '', '0']);
    expect(corsHeaders(r.headers)).toEqual({
      'access-control-allow-origin': '*',
      'access-control-allow-methods': 'PURGE',
    });
    expect(upstreamSaw('OPTIONS', '/ok200/x')).toBe(0);
  });

  it('answers preflights before authentication: no key needed', async () => {
    const r = await preflight('/auth', 'https://a.b.example.com', 'POST');
    expect(r.status).toBe(204);
    expect(r.headers['access-control-allow-origin']).toBe('https://a.b.example.com');
  });

  it('refuses a preflight from a disallowed origin with 403 and no CORS headers, never proxied', async () => {
    const r = await preflight('/api/refused', 'https://evil.test', 'GET');
    expect(r.status).toBe(403);
    expect(r.headers['content-type']).toBe('application/problem+json');
    expect(JSON.parse(r.text)).toMatchObject({
      code: 'SLC_ERR_CORS_REFUSED',
      detail: 'the origin "https://evil.test" is not allowed',
    });
    expect(corsHeaders(r.headers)).toEqual({});
    expect(r.headers.vary).toMatch(/^Origin, /);
    expect(upstreamSaw('OPTIONS', '/api/refused')).toBe(0);
  });

  it('refuses a method or a request header outside the policy', async () => {
    const method = await preflight('/api', 'http://app.test', 'DELETE');
    expect(method.status).toBe(403);
    expect(JSON.parse(method.text).detail).toBe('the method "DELETE" is not allowed');
    expect(corsHeaders(method.headers)).toEqual({});
    const header = await preflight('/open', 'https://any.test', 'GET', {
      'access-control-request-headers': 'content-type, x-other',
    });
    expect(header.status).toBe(403);
    expect(JSON.parse(header.text).detail).toBe('the request header "x-other" is not allowed');
    expect(corsHeaders(header.headers)).toEqual({});
  });

  it('answers the configured allowHeaders and "*" for any origin without credentials', async () => {
    const r = await preflight('/open', 'https://any.test', 'POST', {
      'access-control-request-headers': 'x-api-version',
    });
    expect(r.status).toBe(204);
    expect(corsHeaders(r.headers)).toEqual({
      'access-control-allow-origin': '*',
      'access-control-allow-methods': 'GET, HEAD, POST, PUT, PATCH, DELETE',
      'access-control-allow-headers': 'Content-Type, X-Api-Version',
    });
  });

  it('allows private network access only where configured', async () => {
    const pna = { 'access-control-request-private-network': 'true' };
    const on = await preflight('/api', 'https://x.corp.test', 'GET', pna);
    expect(on.status).toBe(204);
    expect(on.headers['access-control-allow-private-network']).toBe('true');
    const off = await preflight('/open', 'https://x.corp.test', 'GET', pna);
    expect(off.status).toBe(204);
    expect(off.headers['access-control-allow-private-network']).toBeUndefined();
  });

  it('proxies a plain OPTIONS (no Access-Control-Request-Method): it is not a preflight', async () => {
    const r = await send('/api/plain-options', 'OPTIONS', { origin: 'http://app.test' });
    expect(r.status).toBe(200);
    expect(upstreamSaw('OPTIONS', '/api/plain-options')).toBe(1);
    expect(r.headers['access-control-allow-origin']).toBe('http://app.test');
    expect(r.headers.vary).toBe('Origin');
  });
});

describe('cors actual requests', () => {
  it('echoes an allowed origin with credentials and exposed headers, and Vary: Origin', async () => {
    for (const origin of ['http://app.test', 'https://deep.sub.example.com', 'https://wiki.corp.test']) {
      const r = await send('/api/x', 'GET', { origin });
      expect(r.status).toBe(200);
      expect(corsHeaders(r.headers), origin).toEqual({
        'access-control-allow-origin': origin,
        'access-control-allow-credentials': 'true',
        'access-control-expose-headers': 'X-Total, Idempotent-Replayed',
      });
      expect(r.headers.vary).toBe('Origin');
    }
  });

  it('gives a disallowed origin no CORS headers (the request still reaches the upstream), but Vary', async () => {
    const r = await send('/api/disallowed', 'GET', { origin: 'https://example.com' });
    expect(r.status).toBe(200);
    expect(corsHeaders(r.headers)).toEqual({});
    expect(r.headers.vary).toBe('Origin');
  });

  it('never allows an Origin sent on two lines (joined, it is no origin)', async () => {
    const reply = await rawRequest(
      dp.proxyUrl,
      'GET /api/two-origins HTTP/1.1\r\nHost: gw\r\nOrigin: https://a.corp.test\r\nOrigin: https://b.corp.test\r\nConnection: close\r\n\r\n',
    );
    expect(statusOf(reply)).toBe(200);
    expect(reply.toLowerCase()).not.toContain('access-control-');
    expect(reply).toMatch(/\r\nvary: Origin\r\n/i);
  });

  it('answers "*" without credentials on an any-origin route', async () => {
    const r = await send('/open', 'GET', { origin: 'https://whoever.test' });
    expect(corsHeaders(r.headers)).toEqual({ 'access-control-allow-origin': '*' });
    expect(r.headers.vary).toBe('Origin');
  });

  it('sends Vary: Origin without an Origin, and nothing at all on a route without cors', async () => {
    const r = await send('/api/no-origin', 'GET');
    expect(corsHeaders(r.headers)).toEqual({});
    expect(r.headers.vary).toBe('Origin');
    const plain = await send('/plain', 'GET', { origin: 'http://app.test' });
    expect(corsHeaders(plain.headers)).toEqual({});
    expect(plain.headers.vary).toBeUndefined();
  });

  it("replaces an upstream's own CORS headers with the policy's and merges its Vary", async () => {
    const allowed = await send('/upcors', 'GET', { origin: 'http://app.test' });
    expect(corsHeaders(allowed.headers)).toEqual({
      'access-control-allow-origin': 'http://app.test',
      'access-control-allow-credentials': 'true',
      'access-control-expose-headers': 'X-Total, Idempotent-Replayed',
    });
    expect(allowed.headers.vary).toBe('Accept-Encoding, Origin');
    const refused = await send('/upcors', 'GET', { origin: 'https://evil.test' });
    expect(corsHeaders(refused.headers)).toEqual({});
    expect(refused.headers.vary).toBe('Accept-Encoding, Origin');
  });
});

describe("cors on the gateway's own answers", () => {
  const origin = 'http://app.test';
  const expectCors = (r: { headers: Record<string, unknown> }) => {
    expect(r.headers['access-control-allow-origin']).toBe(origin);
    expect(r.headers['access-control-allow-credentials']).toBe('true');
    expect(r.headers.vary).toBe('Origin');
  };

  it('a 401 from key-auth', async () => {
    const r = await send('/auth', 'GET', { origin });
    expect(r.status).toBe(401);
    expectCors(r);
    const ok = await send('/auth', 'GET', { origin, 'x-api-key': 'alice-key' });
    expect(ok.status).toBe(200);
    expectCors(ok);
  });

  it('a 429 from rate-limiting', async () => {
    expect((await send('/limited', 'GET', { origin })).status).toBe(200);
    const r = await send('/limited', 'GET', { origin });
    expect(r.status).toBe(429);
    expect(r.headers['retry-after']).toBeTruthy();
    expectCors(r);
  });

  it('a 502 problem when the upstream cannot be reached', async () => {
    const r = await send('/dead', 'GET', { origin });
    expect(r.status).toBe(502);
    expect(r.headers['content-type']).toBe('application/problem+json');
    expectCors(r);
  });

  it('an idempotency replay, with the origin of the replayed request (never the stored one)', async () => {
    const key = `k-${randomUUID()}`;
    const headers = {
      authorization: 'Bearer alice',
      'idempotency-key': key,
      'content-type': 'application/json',
    };
    const first = await send('/idem', 'POST', { ...headers, origin }, '{"a":1}');
    expect(first.status).toBe(200);
    expectCors(first);
    const other = 'https://shop.example.com';
    const replay = await send('/idem', 'POST', { ...headers, origin: other }, '{"a":1}');
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.headers['access-control-allow-origin']).toBe(other);
    expect(replay.headers.vary).toBe('Origin');
    expect(upstreamSaw('POST', '/idem')).toBe(1);
  });
});

describe('a route that lists its methods without OPTIONS', () => {
  it('answers a preflight about one of its methods (cors answers, nothing is proxied)', async () => {
    const seen = up.seen.length;
    const r = await send('/posts/1', 'OPTIONS', {
      origin: 'http://app.test',
      'access-control-request-method': 'POST',
    });
    expect(r.status).toBe(204);
    expect(r.headers['access-control-allow-origin']).toBe('http://app.test');
    expect(up.seen.length).toBe(seen);
  });
  it('does not match a preflight about a method it does not list, a bare OPTIONS, or a route without cors', async () => {
    const about = (path: string, method: string) =>
      send(path, 'OPTIONS', { origin: 'http://app.test', 'access-control-request-method': method });
    expect((await about('/posts/1', 'GET')).status).toBe(404);
    expect((await send('/posts/1', 'OPTIONS', { origin: 'http://app.test' })).status).toBe(404);
    expect((await about('/nocors/1', 'POST')).status).toBe(404);
  });
});
