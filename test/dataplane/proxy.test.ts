/** The proxy path end to end: a real data plane in front of real upstreams on loopback, real clients. */
import { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DataPlane } from '../../dataplane/main.ts';
import { rawRequest, statusOf } from '../helpers/raw-http.ts';
import { freePort, startTestDataPlane, startUpstream, type Upstream } from '../helpers/servers.ts';
import { route, snapshot, transformer, upstream } from '../helpers/tables.ts';

let echo: Upstream;
let slow: Upstream;
let dp: DataPlane;

beforeAll(async () => {
  echo = await startUpstream((req, res) => {
    if (req.url === '/stream') {
      res.writeHead(200, {
        'content-type': 'text/plain',
        connection: 'close',
        'keep-alive': 'timeout=5',
        'x-up': '1',
      });
      let n = 0;
      const t = setInterval(() => {
        res.write(`chunk${n}\n`);
        if (++n === 3) {
          clearInterval(t);
          res.end();
        }
      }, 20);
      return true;
    }
  });
  slow = await startUpstream((_req, res) => {
    setTimeout(() => res.end('late'), 2_000).unref();
    return true;
  });
  const dead = await freePort();
  dp = await startTestDataPlane({
    maxBodyBytes: 1024,
    maxHeaderBytes: 8 * 1024,
    trustedProxies: [],
    initialSnapshot: snapshot(
      [
        route('api', 'echo', '/api', {
          plugins: [transformer('version', { add: { headers: ['X-Gateway-Version:v1'] } })],
        }),
        route('strip', 'based', '/svc', { stripPrefix: true }),
        route('prefix', 'echo', '/prefix/one', {
          rewrite: { path: { type: 'ReplacePrefixMatch', value: '/one' } },
        }),
        route('full', 'based', '/full', {
          rewrite: { hostname: 'one.example.org', path: { type: 'ReplaceFullPath', value: '/replaced/' } },
        }),
        route('host', 'echo', '/host', { rewrite: { hostname: 'two.example.org' } }),
        route('slow', 'slow', '/slow'),
        route('dead', 'dead', '/dead'),
        route('stream', 'echo', '/stream', { type: 'Exact' }),
      ],
      [
        upstream('echo', echo.url),
        upstream('based', `${echo.url}/base`),
        upstream('slow', slow.url, { responseMs: 200 }),
        upstream('dead', `http://127.0.0.1:${dead}`, { connectMs: 500 }),
      ],
    ),
  });
});

afterAll(async () => {
  await dp?.close();
  await echo?.close();
  await slow?.close();
});

const last = () => echo.seen[echo.seen.length - 1];

describe('proxying', () => {
  it('forwards method, normalized path, query and body, and streams the answer back', async () => {
    const res = await request(`${dp.proxyUrl}/api//charges/./1/../2?b=2&a=1`, {
      method: 'POST',
      body: '{"amount":100,"currency":"EUR"}',
      headers: { 'content-type': 'application/json' },
    });
    expect(res.statusCode).toBe(200);
    const body = (await res.body.json()) as { url: string; method: string; body: string };
    expect(body).toMatchObject({
      method: 'POST',
      url: '/api/charges/2?b=2&a=1',
      body: '{"amount":100,"currency":"EUR"}',
    });
    expect(res.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('adds X-Gateway-Version through the request-transformer', async () => {
    await request(`${dp.proxyUrl}/api/x`).then((r) => r.body.dump());
    expect(last().headers['x-gateway-version']).toBe('v1');
  });

  it('strips the matched prefix and prepends the upstream base path', async () => {
    await request(`${dp.proxyUrl}/svc/items/7?q=1`).then((r) => r.body.dump());
    expect(last().url).toBe('/base/items/7?q=1');
    await request(`${dp.proxyUrl}/svc`).then((r) => r.body.dump());
    expect(last().url).toBe('/base');
  });

  it('rewrites the matched prefix or the whole path, and the Host, keeping the query', async () => {
    const seen = async (path: string) => {
      await request(`${dp.proxyUrl}${path}`).then((r) => r.body.dump());
      return { url: last().url, host: last().headers.host };
    };
    expect(await seen('/prefix/one/two?x=1')).toEqual({
      url: '/one/two?x=1',
      host: `127.0.0.1:${echo.port}`,
    });
    expect((await seen('/prefix/one')).url).toBe('/one');
    expect((await seen('/prefix/one/')).url).toBe('/one/');
    expect(await seen('/full/a/b?y=2')).toEqual({ url: '/base/replaced/?y=2', host: 'one.example.org' });
    expect(await seen('/host/a')).toEqual({ url: '/host/a', host: 'two.example.org' });
  });

  it('honours a valid X-Request-Id and forwards it', async () => {
    const res = await request(`${dp.proxyUrl}/api/x`, { headers: { 'x-request-id': 'req-abc-123' } });
    await res.body.dump();
    expect(res.headers['x-request-id']).toBe('req-abc-123');
    expect(last().headers['x-request-id']).toBe('req-abc-123');
  });

  it('streams a chunked upstream response and drops its hop-by-hop headers', async () => {
    const res = await request(`${dp.proxyUrl}/stream`);
    expect(res.headers['x-up']).toBe('1');
    expect(res.headers['keep-alive']).not.toBe('timeout=5');
    expect(res.headers.connection).not.toBe('close');
    expect(await res.body.text()).toBe('chunk0\nchunk1\nchunk2\n');
  });

  it('streams a chunked request body', async () => {
    const body = (async function* () {
      yield 'part1,';
      await sleep(10);
      yield 'part2';
    })();
    const res = await request(`${dp.proxyUrl}/api/upload`, { method: 'PUT', body: Readable.from(body) });
    expect(((await res.body.json()) as { body: string }).body).toBe('part1,part2');
  });
});

describe('headers the gateway owns', () => {
  it('drops hop-by-hop headers and those named in Connection, but never its own', async () => {
    const reply = await rawRequest(
      dp.proxyUrl,
      'GET /api/h HTTP/1.1\r\nHost: gw.example\r\nConnection: close, X-Drop-Me, X-Forwarded-For, X-Gateway-Version, X-Request-Id\r\n' +
        'X-Drop-Me: 1\r\nKeep-Alive: timeout=1\r\nTE: trailers\r\nProxy-Authorization: Basic eA==\r\nX-Keep: yes\r\n\r\n',
    );
    expect(statusOf(reply)).toBe(200);
    const h = last().headers;
    expect(h['x-drop-me']).toBeUndefined();
    expect(h['keep-alive']).toBeUndefined();
    expect(h.te).toBeUndefined();
    expect(h['proxy-authorization']).toBeUndefined();
    expect(h['x-keep']).toBe('yes');
    expect(h['x-forwarded-for']).toBe('127.0.0.1');
    expect(h['x-gateway-version']).toBe('v1');
    expect(h['x-request-id']).toBeTruthy();
    expect(h['x-forwarded-host']).toBe('gw.example');
    expect(h.forwarded).toBe('for=127.0.0.1;host=gw.example;proto=http');
  });

  it('replaces X-Forwarded-* and Forwarded from an untrusted peer, and removes X-Sluice-*', async () => {
    await request(`${dp.proxyUrl}/api/x`, {
      headers: {
        'x-forwarded-for': '6.6.6.6',
        'x-forwarded-proto': 'https',
        'x-forwarded-host': 'evil.example',
        forwarded: 'for=6.6.6.6',
        'x-real-ip': '6.6.6.6',
        'x-sluice-consumer': 'admin',
      },
    }).then((r) => r.body.dump());
    const h = last().headers;
    expect(h['x-forwarded-for']).toBe('127.0.0.1');
    expect(h['x-forwarded-proto']).toBe('http');
    expect(h['x-forwarded-host']).not.toBe('evil.example');
    expect(h.forwarded).not.toContain('6.6.6.6');
    expect(h['x-real-ip']).toBeUndefined();
    expect(h['x-sluice-consumer']).toBeUndefined();
  });

  it('refuses a header whose underscores alias a gateway-owned name', async () => {
    const reply = await rawRequest(
      dp.proxyUrl,
      'GET /api/x HTTP/1.1\r\nHost: a\r\nX_Forwarded_For: 1.2.3.4\r\n\r\n',
    );
    expect(statusOf(reply)).toBe(400);
    expect(reply).toContain('SLC_ERR_BAD_HEADER');
  });
});

describe('errors are problem+json with stable codes', () => {
  const problemOf = async (res: Awaited<ReturnType<typeof request>>) => {
    expect(res.headers['content-type']).toBe('application/problem+json');
    return (await res.body.json()) as { code: string; status: number; requestId: string };
  };

  it('404 when no route matches', async () => {
    const res = await request(`${dp.proxyUrl}/nothing-here`);
    expect(res.statusCode).toBe(404);
    expect(await problemOf(res)).toMatchObject({ code: 'SLC_ERR_ROUTE_NOT_FOUND', status: 404 });
  });

  it('504 when the upstream does not answer in time', async () => {
    const t0 = Date.now();
    const res = await request(`${dp.proxyUrl}/slow`);
    expect(res.statusCode).toBe(504);
    expect((await problemOf(res)).code).toBe('SLC_ERR_UPSTREAM_TIMEOUT');
    expect(Date.now() - t0).toBeLessThan(1_800);
  });

  it('502 when the upstream refuses connections', async () => {
    const res = await request(`${dp.proxyUrl}/dead`);
    expect(res.statusCode).toBe(502);
    expect((await problemOf(res)).code).toBe('SLC_ERR_UPSTREAM_UNAVAILABLE');
  });

  it('413 before reading a body whose Content-Length is over the limit', async () => {
    const n = echo.seen.length;
    const res = await request(`${dp.proxyUrl}/api/big`, { method: 'POST', body: 'x'.repeat(2048) });
    expect(res.statusCode).toBe(413);
    expect((await problemOf(res)).code).toBe('SLC_ERR_BODY_TOO_LARGE');
    expect(echo.seen.length).toBe(n);
  });

  it('413 when a chunked body grows over the limit while streaming', async () => {
    const body = (async function* () {
      for (let i = 0; i < 8; i++) yield 'y'.repeat(512);
    })();
    const res = await request(`${dp.proxyUrl}/api/big`, { method: 'POST', body: Readable.from(body) });
    expect(res.statusCode).toBe(413);
    expect((await problemOf(res)).code).toBe('SLC_ERR_BODY_TOO_LARGE');
  });

  it('431 for headers over the limit', async () => {
    const reply = await rawRequest(
      dp.proxyUrl,
      `GET /api/x HTTP/1.1\r\nHost: a\r\nX-Big: ${'z'.repeat(9000)}\r\n\r\n`,
    );
    expect(statusOf(reply)).toBe(431);
  });
});

describe('one reading of the message (strict parsing)', () => {
  it.each([
    [
      'both Transfer-Encoding and Content-Length',
      'POST /api/x HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n',
    ],
    [
      'two different Content-Length',
      'POST /api/x HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd',
    ],
    ['obs-fold', 'GET /api/x HTTP/1.1\r\nHost: a\r\nX-A: 1\r\n  folded\r\n\r\n'],
    ['bare LF line ending inside headers', 'GET /api/x HTTP/1.1\r\nHost: a\nX-A: 1\r\n\r\n'],
    [
      'chunked not last',
      'POST /api/x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, gzip\r\n\r\n0\r\n\r\n',
    ],
    ['HTTP/0.9-style request line', 'GET /api/x\r\n\r\n'],
    ['HTTP/2 version on an HTTP/1 connection', 'GET /api/x HTTP/2.0\r\nHost: a\r\n\r\n'],
    [
      'Transfer-Encoding on HTTP/1.0',
      'POST /api/x HTTP/1.0\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n',
    ],
    ['two Host headers', 'GET /api/x HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n'],
    ['no Host header', 'GET /api/x HTTP/1.1\r\n\r\n'],
  ])('refuses %s with 400 and never forwards it', async (_name, raw) => {
    const n = echo.seen.length;
    const reply = await rawRequest(dp.proxyUrl, raw, 1_500);
    expect(statusOf(reply)).toBe(400);
    expect(echo.seen.length).toBe(n);
  });
});
