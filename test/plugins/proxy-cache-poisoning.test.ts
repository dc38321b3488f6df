/**
 * Cache poisoning through request headers outside the key (proxy-cache/override-headers.ts),
 * against a real upstream that honours them as common frameworks do: X-Original-URL and
 * X-Rewrite-URL pick the path served, the method overrides the method, X-Forwarded-Host,
 * X-Host and X-Forwarded-Server the host of the links it writes, X-Forwarded-Scheme an https
 * redirect. Each attempt is sent by an "attacker"; the next plain request (a "victim") must get
 * the page as it is. A header named in varyHeaders is forwarded and keys its own entry.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import http2 from 'node:http2';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DataPlane } from '../../dataplane/main.ts';
import { OVERRIDE_HEADERS } from '../../dataplane/plugins/proxy-cache/override-headers.ts';
import { startTestDataPlane, startUpstream, type Upstream } from '../helpers/servers.ts';
import { pluginInstance, route, snapshot, upstream } from '../helpers/tables.ts';
import { makePki } from '../tls/pki.ts';
import { tlsSnapshot } from '../tls/tls-helpers.ts';

/** A back end that believes every override header, and marks its answers cacheable for everyone. */
function gullible(req: IncomingMessage, res: ServerResponse): boolean {
  const h = (name: string) => {
    const v = req.headers[name] ?? req.headers[name.replaceAll('-', '_')];
    return Array.isArray(v) ? v[0] : v;
  };
  const path = h('x-original-url') ?? h('x-rewrite-url') ?? (req.url ?? '/').split('?')[0];
  const method = h('x-http-method-override') ?? h('x-http-method') ?? h('x-method-override') ?? req.method;
  const host = h('x-host') ?? h('x-forwarded-server') ?? h('x-forwarded-host') ?? req.headers.host;
  const cacheable = { 'cache-control': 'public, max-age=60', 'content-type': 'text/html' };
  if (h('x-forwarded-scheme') === 'http') {
    res.writeHead(301, { ...cacheable, location: `https://${host}${path}` }).end();
    return true;
  }
  const page = path.includes('admin') ? 'ADMIN PANEL' : `page ${path}`;
  res.writeHead(200, cacheable).end(`${method} ${page} <a href="https://${host}/next">next</a>`);
  return true;
}

let up: Upstream;
let dp: DataPlane;
beforeAll(async () => {
  up = await startUpstream(gullible);
  const cache = (name: string, config: Record<string, unknown> = {}) =>
    pluginInstance(name, 'proxy-cache', config);
  dp = await startTestDataPlane({
    initialSnapshot: snapshot(
      [
        route('c', 'u', '/c', { plugins: [cache('c', { methods: ['GET', 'HEAD', 'POST'] })] }),
        route('keyed', 'u', '/keyed', { plugins: [cache('k', { varyHeaders: ['X-Host'] })] }),
        route('plain', 'u', '/plain'),
      ],
      [upstream('u', up.url)],
    ),
  });
});
afterAll(async () => {
  await dp?.close();
  await up?.close();
});

const HOST = 'shop.example';
async function get(path: string, headers: Record<string, string> = {}, method = 'GET') {
  const r = await request(`${dp.proxyUrl}${path}`, {
    method: method as 'GET',
    headers: { host: HOST, ...headers },
  });
  return { status: r.statusCode, headers: r.headers, body: await r.body.text() };
}

const ATTACKS: [string, string][] = [
  ['X-Original-URL', '/admin'],
  ['X-Rewrite-URL', '/admin'],
  ['X-HTTP-Method-Override', 'DELETE'],
  ['X-HTTP-Method', 'DELETE'],
  ['X-Method-Override', 'DELETE'],
  ['X-Forwarded-Host', 'evil.example'],
  ['X-Host', 'evil.example'],
  ['X-Forwarded-Server', 'evil.example'],
  ['X-Forwarded-Scheme', 'http'],
  ['X_Original_URL', '/admin'], // CGI and PHP read it as X-Original-URL
  ['x-http_method-override', 'DELETE'],
];

describe('proxy-cache: override headers outside the key never reach the upstream', () => {
  it('the list is the one the docs give', () => {
    expect(OVERRIDE_HEADERS).toHaveLength(9);
  });

  it.each(ATTACKS)(
    '%s: %s has no effect, and the next client gets the page as it is',
    async (name, value) => {
      const path = `/c/${name.toLowerCase()}`;
      const before = up.seen.length;
      const attack = await get(path, { [name]: value });
      expect(attack.status).toBe(200);
      expect(attack.body).toBe(`GET page ${path} <a href="https://${HOST}/next">next</a>`);
      expect(attack.headers['cache-status']).toBe('sluice; fwd=miss; stored');
      const seen = up.seen[before].headers;
      for (const h of [name.toLowerCase(), name.toLowerCase().replaceAll('_', '-')])
        if (h !== 'x-forwarded-host') expect(seen[h], h).toBeUndefined();
      expect(seen['x-forwarded-host'] ?? HOST).toBe(HOST); // the gateway's own: the Host, which the key has
      const victim = await get(path);
      expect(victim.headers['cache-status']).toMatch(/^sluice; hit/);
      expect(victim.body).toBe(attack.body);
    },
  );

  it('a POST the cache may store as its GET is cleaned too', async () => {
    const before = up.seen.length;
    await get('/c/post-page', { 'X-HTTP-Method-Override': 'DELETE', 'X-Original-URL': '/admin' }, 'POST');
    expect(up.seen[before].headers['x-http-method-override']).toBeUndefined();
    expect(up.seen[before].headers['x-original-url']).toBeUndefined();
  });

  it('writes the cache never stores keep their headers (method tunnelling through PATCH still works)', async () => {
    const before = up.seen.length;
    await get('/c/thing', { 'X-HTTP-Method-Override': 'PUT' }, 'PATCH');
    expect(up.seen[before].headers['x-http-method-override']).toBe('PUT');
  });

  it('routes without a cache are left alone', async () => {
    const r = await get('/plain/x', { 'X-Original-URL': '/admin' });
    expect(r.body).toContain('ADMIN PANEL');
  });
});

describe('proxy-cache: an override header named in varyHeaders is forwarded and keys its entries', () => {
  it('X-Host in varyHeaders: each value its own entry; a client without it is served its own', async () => {
    const evil = await get('/keyed/p', { 'X-Host': 'evil.example' });
    expect(evil.body).toContain('https://evil.example/next');
    const victim = await get('/keyed/p');
    expect(victim.headers['cache-status']).toBe('sluice; fwd=miss; stored');
    expect(victim.body).toContain(`https://${HOST}/next`);
    const evilAgain = await get('/keyed/p', { 'X-Host': 'evil.example' });
    expect(evilAgain.headers['cache-status']).toMatch(/^sluice; hit/);
    expect(evilAgain.body).toContain('https://evil.example/next');
  });

  it("X-Forwarded-Host from a client is the gateway's own business anyway: dropped at ingress, set to the Host", async () => {
    const r = await get('/c/xfh', { 'X-Forwarded-Host': 'evil.example' });
    expect(r.body).toContain(`https://${HOST}/next`);
    expect(up.seen[up.seen.length - 1].headers['x-forwarded-host']).toBe(HOST);
  });
});

describe('proxy-cache over HTTP/2: the Host (:authority) is in the key too', () => {
  it('two hosts on one route keep two entries, as over HTTP/1.1', async () => {
    const pki = makePki();
    const leaf = pki.leaf('any', ['*.example.test']);
    const u = await startUpstream(gullible);
    const tls = await startTestDataPlane({
      httpsPort: 0,
      tlsDefault: { certFile: leaf.certFile, keyFile: leaf.keyFile },
      initialSnapshot: tlsSnapshot(
        [route('c', 'u', '/c', { plugins: [pluginInstance('c', 'proxy-cache', {})] })],
        [upstream('u', u.url)],
        [],
      ),
    });
    const session = http2.connect(tls.httpsUrl, { ca: pki.ca, servername: 'a.example.test' });
    try {
      const get = (authority: string) =>
        new Promise<{ body: string; status: string }>((resolve, reject) => {
          const s = session.request({ ':path': '/c/page', ':authority': authority });
          let body = '';
          let status = '';
          s.on('response', (h) => {
            status = String(h['cache-status']);
          });
          s.on('data', (d) => {
            body += d;
          });
          s.on('end', () => resolve({ body, status }));
          s.on('error', reject);
        });
      const a = await get('a.example.test');
      const b = await get('b.example.test');
      expect(a.body).toContain('https://a.example.test/next');
      expect(b.status).toBe('sluice; fwd=miss; stored');
      expect(b.body).toContain('https://b.example.test/next');
      expect((await get('a.example.test')).status).toMatch(/^sluice; hit/);
    } finally {
      session.close();
      await tls.close();
      await u.close();
    }
  });
});
