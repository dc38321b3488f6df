/**
 * The access log: one JSON line per request with every field an SRE reads (request id, client,
 * method, host, path, redacted query, route, consumer, status, upstream status and address,
 * bytes, latencies, what idempotency, the rate limit and the cache decided), written for refused
 * requests too (ingress refusals, the router's 404, a parser's 400, 401 and 429 from plugins),
 * sampled and switched off per route id, and never holding a secret: tokens, API keys, cookies,
 * idempotency keys and passwords sent in headers, the query, the path, the userinfo and the body.
 */
import { createHash, randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import { SignJWT } from 'jose';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DataPlane, DataPlaneOptions } from '../../dataplane/main.ts';
import { createLogger } from '../../dataplane/observability/log.ts';
import { rawRequest, statusOf } from '../helpers/raw-http.ts';
import { startTestDataPlane, startUpstream, type Upstream } from '../helpers/servers.ts';
import {
  idempotencyPlugin,
  pluginInstance,
  rateLimitPlugin,
  route,
  snapshot,
  upstream,
} from '../helpers/tables.ts';

const sha = (s: string) => createHash('sha256').update(s).digest('hex');
const HS_SECRET = 'jwt-shared-secret-of-32-bytes-or-more!!';
const keyAuth = pluginInstance('keys', 'key-auth', {
  consumers: [{ name: 'alice', secretKeyRef: { name: 'k', key: 'a' }, sha256: sha('SECRET-API-KEY-alice') }],
});
const jwt = pluginInstance('jwt', 'jwt', {
  issuers: [
    {
      issuer: 'hs-issuer',
      audiences: ['orders'],
      algorithms: ['HS256'],
      keys: [{ secretKeyRef: { name: 's', key: 'k' }, value: Buffer.from(HS_SECRET).toString('base64') }],
    },
  ],
});
const table = (u: Upstream) =>
  snapshot(
    [
      route('a', 'u', '/a', {
        plugins: [
          keyAuth,
          rateLimitPlugin('rl', { minute: 1000, policy: 'local' }),
          idempotencyPlugin('idem'),
        ],
      }),
      route('j', 'u', '/j', { plugins: [jwt] }),
      route('one', 'u', '/one', { plugins: [rateLimitPlugin('one', { minute: 1, policy: 'local' })] }),
      route('c', 'u', '/c', { plugins: [pluginInstance('cache', 'proxy-cache', {})] }),
      route('quiet', 'u', '/quiet'),
    ],
    [upstream('u', u.url)],
  );

type Line = Record<string, unknown>;
async function startLogged(u: Upstream, opts: Partial<DataPlaneOptions> = {}) {
  const text: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, cb) {
      text.push(chunk.toString());
      cb();
    },
  });
  const dp = await startTestDataPlane({
    accessLog: true,
    log: createLogger('info', sink),
    initialSnapshot: table(u),
    ...opts,
  });
  /** The lines written so far (the logger is asynchronous: flushed first). */
  const lines = async (): Promise<Line[]> => {
    await new Promise<void>((r) => dp.log.flush(() => r()));
    return text
      .join('')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Line)
      .filter((l) => l.msg === 'request' || l.msg === 'request failed');
  };
  return { dp, lines, text };
}

let up: Upstream;
let dp: DataPlane;
let lines: () => Promise<Line[]>;
let text: string[];
beforeAll(async () => {
  // /c answers are cacheable (one minute), the rest are the echo.
  up = await startUpstream((req, res) => {
    if (!req.url?.startsWith('/c')) return false;
    res.writeHead(200, {
      'content-type': 'text/plain',
      'cache-control': 'max-age=60',
      'content-length': '2',
    });
    res.end('ok');
    return true;
  });
  ({ dp, lines, text } = await startLogged(up));
});
afterAll(async () => {
  await dp.close();
  await up.close();
});

const call = async (path: string, headers: Record<string, string> = {}, method = 'GET', body?: string) => {
  const r = await request(`${dp.proxyUrl}${path}`, { method: method as 'GET', headers, body });
  return { status: r.statusCode, headers: r.headers, body: await r.body.text() };
};
const lineOf = async (requestId: string) => (await lines()).find((l) => l.requestId === requestId);

describe('access log', () => {
  it('a proxied request: every field, the query reduced to its names', async () => {
    const id = randomUUID();
    const r = await call(
      '/a/items/../orders?sort=asc&apikey=SECRET-IN-QUERY',
      {
        'x-api-key': 'SECRET-API-KEY-alice',
        'x-request-id': id,
        'idempotency-key': 'SECRET-IDEMPOTENCY-KEY-0123456789abcdef',
        'content-type': 'application/json',
      },
      'POST',
      '{"password":"SECRET-IN-BODY"}',
    );
    expect(r.status, r.body).toBe(200);
    const l = (await lineOf(id))!;
    expect(l).toMatchObject({
      level: 'info',
      requestId: id,
      client: '127.0.0.1',
      method: 'POST',
      host: new URL(dp.proxyUrl).host,
      path: '/a/orders',
      query: 'sort=[redacted]&apikey=[redacted]',
      route: 'route/test/a/a/0',
      consumer: 'alice',
      status: 200,
      upstreamStatus: 200,
      upstream: new URL(up.url).origin,
      bytesIn: Buffer.byteLength('{"password":"SECRET-IN-BODY"}'),
      idempotency: 'executed',
      rateLimit: 'allowed',
    });
    expect(typeof l.time).toBe('string');
    expect(l.bytesOut as number).toBeGreaterThan(Buffer.byteLength(r.body));
    expect(l.durationMs as number).toBeGreaterThan(0);
    expect(l.upstreamMs as number).toBeGreaterThan(0);
    expect(l.upstreamMs as number).toBeLessThanOrEqual(l.durationMs as number);
    // The same key again is a replay: the line says so, and no upstream status (nothing was called).
    const again = randomUUID();
    await call(
      '/a/items/../orders?sort=asc&apikey=SECRET-IN-QUERY',
      {
        'x-api-key': 'SECRET-API-KEY-alice',
        'x-request-id': again,
        'idempotency-key': 'SECRET-IDEMPOTENCY-KEY-0123456789abcdef',
        'content-type': 'application/json',
      },
      'POST',
      '{"password":"SECRET-IN-BODY"}',
    );
    expect(await lineOf(again)).toMatchObject({ status: 200, idempotency: 'replayed' });
    expect((await lineOf(again))!.upstreamStatus).toBeUndefined();
  });

  it('the cache status: a miss, then a hit', async () => {
    const [m, h] = [randomUUID(), randomUUID()];
    await call('/c/x', { 'x-request-id': m });
    await call('/c/x', { 'x-request-id': h });
    expect(await lineOf(m)).toMatchObject({ cache: 'miss', upstreamStatus: 200 });
    expect(await lineOf(h)).toMatchObject({ cache: 'hit', status: 200 });
  });

  it('plugins refusing: 401 from key-auth and jwt, 429 from the rate limit, each one line with its code', async () => {
    const [k, j, ok, limited] = [randomUUID(), randomUUID(), randomUUID(), randomUUID()];
    expect((await call('/a/x', { 'x-request-id': k, 'x-api-key': 'SECRET-WRONG-KEY' })).status).toBe(401);
    const badToken = await new SignJWT({ sub: 'u' })
      .setProtectedHeader({ alg: 'HS256' })
      .setIssuer('hs-issuer')
      .setAudience('orders')
      .setExpirationTime('5m')
      .sign(new TextEncoder().encode(`${HS_SECRET}-not-it`));
    expect((await call('/j/x', { 'x-request-id': j, authorization: `Bearer ${badToken}` })).status).toBe(401);
    expect((await call('/one', { 'x-request-id': ok })).status).toBe(200);
    expect((await call('/one', { 'x-request-id': limited })).status).toBe(429);
    expect(await lineOf(k)).toMatchObject({
      status: 401,
      error: 'SLC_ERR_CREDENTIALS_INVALID',
      route: 'route/test/a/a/0',
    });
    expect(await lineOf(j)).toMatchObject({ status: 401, route: 'route/test/j/j/0' });
    expect(await lineOf(ok)).toMatchObject({ status: 200, rateLimit: 'allowed' });
    expect(await lineOf(limited)).toMatchObject({
      status: 429,
      rateLimit: 'limited',
      error: 'SLC_ERR_RATE_LIMITED',
    });
    expect((await lineOf(limited))!.upstreamStatus).toBeUndefined();
    // The token is in none of the lines, valid or not.
    expect(text.join('')).not.toContain(badToken.split('.')[2]);
  });

  it('refused at ingress: no route (404), a bad path (400), a method not proxied (405), an unparsable request (400)', async () => {
    const before = (await lines()).length;
    expect((await call('/nowhere?token=SECRET-404-QUERY')).status).toBe(404);
    expect((await call('/a/%2e%2e%2fetc?x=SECRET-400-QUERY')).status).toBe(400);
    expect((await call('/a', {}, 'PROPFIND')).status).toBe(405);
    const host = new URL(dp.proxyUrl).host;
    const raw = await rawRequest(
      dp.proxyUrl,
      `GET /a HTTP/1.1\r\nHost: ${host}\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n`,
    );
    expect(statusOf(raw)).toBe(400);
    const refused = (await lines()).slice(before);
    expect(refused.map((l) => [l.status, l.error])).toEqual([
      [404, 'SLC_ERR_ROUTE_NOT_FOUND'],
      [400, 'SLC_ERR_BAD_PATH'],
      [405, 'SLC_ERR_METHOD_NOT_ALLOWED'],
      [400, 'SLC_ERR_BAD_REQUEST'],
    ]);
    for (const l of refused) {
      expect(l.client).toBe('127.0.0.1');
      expect(l.route).toBeNull();
      expect(typeof l.durationMs).toBe('number');
    }
    expect(refused[0]).toMatchObject({ method: 'GET', path: '/nowhere', host });
    expect(refused[0].requestId).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('never a secret: tokens, keys, cookies and passwords in every position of accepted and refused requests', async () => {
    const secrets = {
      authorization: 'Bearer SECRET-BEARER-TOKEN',
      cookie: 'session=SECRET-COOKIE',
      'proxy-authorization': 'Basic U0VDUkVULVBST1hZ',
      'x-api-key': 'SECRET-API-KEY-alice',
      'idempotency-key': 'SECRET-IDEMPOTENCY-KEY-2-0123456789abcdef',
      'x-custom-token': 'SECRET-CUSTOM-HEADER',
    };
    for (const path of [
      '/a/x?access_token=SECRET-QUERY-TOKEN',
      '/quiet/x?password=SECRET-QUERY-PW',
      '/nowhere?k=SECRET-QUERY-404',
    ])
      await call(
        path,
        { ...secrets, 'content-type': 'application/json' },
        'POST',
        '{"secret":"SECRET-BODY"}',
      );
    const host = new URL(dp.proxyUrl).host;
    // Absolute-form targets with userinfo, refused by the parser and by the ingress.
    await rawRequest(
      dp.proxyUrl,
      `GET http://user:SECRET-USERINFO@${host}/a?SECRET-RAW-QUERY HTTP/1.1\r\nHost: ${host}\r\nCookie: c=SECRET-RAW-COOKIE\r\n\r\n`,
      1_000,
    );
    await rawRequest(
      dp.proxyUrl,
      `GET /a/%zz?SECRET-BADPATH-QUERY HTTP/1.1\r\nHost: ${host}\r\nAuthorization: Bearer SECRET-RAW-BEARER\r\n\r\n`,
      1_000,
    );
    await lines();
    const all = text.join('');
    expect(all).toContain('route/test/quiet/quiet/0');
    for (const line of all.split('\n'))
      if (/SECRET/.test(line)) throw new Error(`a secret reached the log: ${line}`);
    expect(all).not.toContain('U0VDUkVULVBST1hZ');
  });
});

describe('access log switches', () => {
  it('sampling keeps every error and no answered request at 0; a silenced route id logs only its failures', async () => {
    const s = await startLogged(up, { accessLogSample: 0 });
    const q = await startLogged(up, { accessLogOff: ['route/test/quiet/'] });
    try {
      const get = (d: DataPlane, path: string) => request(`${d.proxyUrl}${path}`).then((r) => r.body.dump());
      await get(s.dp, '/quiet/x');
      await get(s.dp, '/nowhere');
      await get(s.dp, '/a/x');
      expect((await s.lines()).map((l) => l.status)).toEqual([404, 401]);
      await get(q.dp, '/quiet/x');
      await get(q.dp, '/c/x');
      expect((await q.lines()).map((l) => l.route)).toEqual(['route/test/c/c/0']);
    } finally {
      await s.dp.close();
      await q.dp.close();
    }
  });
});
