/**
 * The redirect handler kind (Gateway API's RequestRedirect filter): the Location's rules as pure
 * functions (the spec's table for ReplacePrefixMatch, its port rules), then a real data plane
 * answering real clients over HTTP/1.1, TLS and h2, with no upstream called.
 */
import { connect } from 'node:http2';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  locationOf,
  pathRule,
  type RequestUrl,
  splitHost,
} from '../../dataplane/handlers/redirect/location.ts';
import type { RedirectHandler } from '../../dataplane/handlers/redirect/manifest.ts';
import type { DataPlane } from '../../dataplane/main.ts';
import { rawRequest, statusOf } from '../helpers/raw-http.ts';
import { startTestDataPlane, startUpstream, type Upstream } from '../helpers/servers.ts';
import { pluginInstance, route, upstream } from '../helpers/tables.ts';
import { makePki, type Pki } from '../tls/pki.ts';
import { certificate, tlsSnapshot } from '../tls/tls-helpers.ts';

const redirect = (fields: Partial<RedirectHandler> = {}): RedirectHandler => ({
  type: 'redirect',
  statusCode: 302,
  ...fields,
});

describe('the path rule', () => {
  // The spec's table (HTTPPathModifier.ReplacePrefixMatch), with the route prefixes as the table
  // holds them (normalized: "/foo/" is "/foo"); "" as a value is "/" in the table.
  it.each([
    ['/foo/bar', '/foo', '/xyz', '/xyz/bar'],
    ['/foo/bar', '/foo', '/xyz/', '/xyz/bar'],
    ['/foo', '/foo', '/xyz', '/xyz'],
    ['/foo/', '/foo', '/xyz', '/xyz/'],
    ['/foo/bar', '/foo', '/', '/bar'],
    ['/foo/', '/foo', '/', '/'],
    ['/foo', '/foo', '/', '/'],
    ['/a/b', '/', '/x', '/x/a/b'],
    ['/', '/', '/x', '/x/'],
  ])('ReplacePrefixMatch: %s under %s with %s → %s', (path, prefix, value, out) => {
    expect(pathRule(redirect({ path: { type: 'ReplacePrefixMatch', value } }), prefix)(path)).toBe(out);
  });

  it('ReplaceFullPath replaces the whole path; none keeps it', () => {
    expect(pathRule(redirect({ path: { type: 'ReplaceFullPath', value: '/full/' } }), '/a')('/a/b')).toBe(
      '/full/',
    );
    expect(pathRule(redirect(), '/a')('/a/b')).toBe('/a/b');
  });
});

describe('the Location', () => {
  const req = (host: string, scheme: 'http' | 'https' = 'http'): RequestUrl => ({
    scheme,
    host,
    path: '/p',
    query: 'a=1&b',
  });
  const at = (entry: RedirectHandler, r: RequestUrl) => locationOf(entry, (p) => p, r);

  it("keeps the request's scheme, host, port and query when the entry changes nothing", () => {
    expect(at(redirect(), req('example.com:8080'))).toBe('http://example.com:8080/p?a=1&b');
    expect(at(redirect(), req('example.com'))).toBe('http://example.com/p?a=1&b');
    expect(at(redirect(), { ...req('[::1]:8443', 'https'), query: '' })).toBe('https://[::1]:8443/p');
  });

  it("hostname replaces the Host's name and keeps its port (the listener's, as the client reached it)", () => {
    expect(at(redirect({ hostname: 'example.org' }), req('gw.local:8080'))).toBe(
      'http://example.org:8080/p?a=1&b',
    );
  });

  it("a scheme given without a port takes the scheme's well-known port, which is left out", () => {
    expect(at(redirect({ scheme: 'https' }), req('gw.local:8080'))).toBe('https://gw.local/p?a=1&b');
    expect(at(redirect({ scheme: 'http' }), req('gw.local:8443', 'https'))).toBe('http://gw.local/p?a=1&b');
    // The spec: a scheme given sets the port even when it is the request's own scheme.
    expect(at(redirect({ scheme: 'http' }), req('gw.local:8080'))).toBe('http://gw.local/p?a=1&b');
  });

  it("a port given is kept unless it is the final scheme's well-known one", () => {
    expect(at(redirect({ port: 8443, scheme: 'https' }), req('gw.local:80'))).toBe(
      'https://gw.local:8443/p?a=1&b',
    );
    expect(at(redirect({ port: 443, scheme: 'https' }), req('gw.local:8080'))).toBe(
      'https://gw.local/p?a=1&b',
    );
    expect(at(redirect({ port: 80 }), req('gw.local:8080'))).toBe('http://gw.local/p?a=1&b');
    expect(at(redirect({ port: 443 }), req('gw.local:8080'))).toBe('http://gw.local:443/p?a=1&b');
  });

  it('a request without Host needs the hostname; a Host no URL can carry gets none', () => {
    expect(at(redirect(), req(''))).toBeNull();
    expect(at(redirect({ hostname: 'example.org' }), req(''))).toBe('http://example.org/p?a=1&b');
    for (const bad of ['a b', 'a/b', 'a:b:c', 'a:99999', 'a@b:x']) {
      expect(splitHost(bad)).toBeNull();
      expect(at(redirect({ hostname: 'example.org' }), req(bad))).toBeNull();
    }
    expect(splitHost('Example.COM:08080')).toEqual({ name: 'Example.COM', port: 8080 });
    expect(splitHost('10.0.0.1:')).toEqual({ name: '10.0.0.1', port: null });
  });
});

describe('redirect routes on a data plane', () => {
  let dp: DataPlane;
  let echo: Upstream;
  let pki: Pki;
  let port: number;

  const redirectRoute = (
    name: string,
    path: string,
    entry: RedirectHandler,
    opts: Parameters<typeof route>[3] = {},
  ) => ({
    ...route(name, 'echo', path, opts),
    handler: entry,
  });

  beforeAll(async () => {
    pki = makePki();
    echo = await startUpstream();
    dp = await startTestDataPlane({
      httpsPort: 0,
      initialSnapshot: tlsSnapshot(
        [
          redirectRoute(
            'moved',
            '/old',
            redirect({ statusCode: 301, path: { type: 'ReplacePrefixMatch', value: '/new' } }),
          ),
          redirectRoute(
            'full',
            '/full',
            redirect({ path: { type: 'ReplaceFullPath', value: '/replacement' } }),
          ),
          redirectRoute('host', '/host', redirect({ hostname: 'example.org' })),
          redirectRoute('secure', '/secure', redirect({ statusCode: 308, scheme: 'https' })),
          redirectRoute('port', '/port', redirect({ statusCode: 307, port: 8443, scheme: 'https' })),
          redirectRoute('see', '/see', redirect({ statusCode: 303 }), {
            plugins: [pluginInstance('tag', 'response-transformer', { add: { headers: ['x-tag:seen'] } })],
          }),
          route('echo', 'echo', '/echo'),
        ],
        [upstream('echo', echo.url)],
        [certificate('r', ['r.example.test'], pki.leaf('r', ['r.example.test']))],
      ),
    });
    port = Number(new URL(dp.proxyUrl).port);
  });

  afterAll(async () => {
    await dp?.close();
    await echo?.close();
    pki?.remove();
  });

  const get = async (path: string, opts: Parameters<typeof request>[1] = {}) => {
    const r = await request(`${dp.proxyUrl}${path}`, opts);
    return { status: r.statusCode, headers: r.headers, body: await r.body.text() };
  };

  it('answers the status and Location with an empty body, and calls no upstream', async () => {
    const r = await get('/old/a/b?x=1');
    expect(r.status).toBe(301);
    expect(r.headers.location).toBe(`http://127.0.0.1:${port}/new/a/b?x=1`);
    expect(r.headers['content-length']).toBe('0');
    expect(r.body).toBe('');
    expect(r.headers['x-request-id']).toBeDefined();
    expect(echo.seen).toHaveLength(0);
  });

  it('ReplaceFullPath, hostname, scheme and port each change their part of the Location', async () => {
    expect((await get('/full/x?q')).headers.location).toBe(`http://127.0.0.1:${port}/replacement?q`);
    expect((await get('/host/x')).headers.location).toBe(`http://example.org:${port}/host/x`);
    const secure = await get('/secure/x');
    expect(secure.status).toBe(308);
    expect(secure.headers.location).toBe('https://127.0.0.1/secure/x');
    const p = await get('/port');
    expect(p.status).toBe(307);
    expect(p.headers.location).toBe('https://127.0.0.1:8443/port');
  });

  it('a POST with a body is answered (its body read and dropped) and the connection stays usable', async () => {
    const agent = new Agent({ connections: 1 });
    try {
      const r = await get('/old/form', { method: 'POST', body: 'x'.repeat(100_000), dispatcher: agent });
      expect(r.status).toBe(301);
      const again = await get('/echo', { dispatcher: agent });
      expect(again.status).toBe(200);
    } finally {
      await agent.close();
    }
  });

  it("response plugins see the redirect like an upstream's answer", async () => {
    const r = await get('/see');
    expect(r.status).toBe(303);
    expect(r.headers['x-tag']).toBe('seen');
  });

  it('on the TLS listener the request scheme is https (HTTP/1.1 and h2, whose :authority is the Host)', async () => {
    const agent = new Agent({ connect: { ca: pki.ca, servername: 'r.example.test' } });
    try {
      const httpsPort = new URL(dp.httpsUrl).port;
      const r = await request(`${dp.httpsUrl}/old/a`, {
        dispatcher: agent,
        headers: { host: `r.example.test:${httpsPort}` },
      });
      await r.body.text();
      expect(r.headers.location).toBe(`https://r.example.test:${httpsPort}/new/a`);
    } finally {
      await agent.close();
    }
    const session = connect(dp.httpsUrl, { ca: pki.ca, servername: 'r.example.test' });
    try {
      const headers = await new Promise<Record<string, unknown>>((resolve, reject) => {
        const s = session.request({ ':path': '/host/h2', ':authority': 'r.example.test' });
        s.on('response', (h) => resolve(h));
        s.on('error', reject);
        s.resume();
        s.end();
      });
      expect(headers[':status']).toBe(302);
      expect(headers.location).toBe('https://example.org/host/h2');
    } finally {
      session.close();
    }
  });

  it('a Host no Location can carry is refused with a problem, not echoed', async () => {
    const reply = await rawRequest(
      dp.proxyUrl,
      'GET /old/a HTTP/1.1\r\nHost: a b\r\nConnection: close\r\n\r\n',
    );
    expect(statusOf(reply)).toBe(400);
    expect(reply).toContain('SLC_ERR_BAD_HEADER');
    expect(reply.toLowerCase()).not.toContain('location:');
  });
});
