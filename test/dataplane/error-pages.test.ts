/**
 * The proxy's errorPages (handlers/proxy/error-pages.ts: ingress-nginx's custom-http-errors with a
 * default-backend) end to end on loopback: a listed status from the upstream is replaced by the
 * error upstream's answer (its status, headers and body; the upstream's body dropped), which is
 * asked with path "/", the method, and X-Code, X-Format, X-Original-URI, X-Request-ID and the
 * entry's literal headers; other statuses pass untouched; a request the upstream has no endpoint
 * for is answered there too (X-Code 503); an error upstream that fails is the gateway's problem.
 */
import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Upstream } from '../../dataplane/config/route-table.ts';
import type { DataPlane } from '../../dataplane/main.ts';
import { freePort, startTestDataPlane } from '../helpers/servers.ts';
import { route, snapshot, upstream } from '../helpers/tables.ts';

let app: Server;
let errors: Server;
let dp: DataPlane;
const asked: { method?: string; url?: string; headers: IncomingHttpHeaders }[] = [];

async function listen(s: Server, host: string): Promise<string> {
  s.listen(0, host);
  await once(s, 'listening');
  return `http://${host}:${(s.address() as AddressInfo).port}`;
}

beforeAll(async () => {
  // /status/NNN answers NNN with a body of its own.
  app = createServer((req, res) => {
    req.resume();
    const code = Number(/\/status\/(\d{3})/.exec(req.url ?? '')?.[1] ?? 200);
    res.writeHead(code, { 'content-type': 'text/plain', 'x-from': 'app' }).end(`app says ${code}`);
  });
  errors = createServer((req, res) => {
    req.resume();
    asked.push({ method: req.method, url: req.url, headers: req.headers });
    const code = Number(req.headers['x-code'] ?? 500);
    res.writeHead(code, { 'content-type': 'text/html', 'x-from': 'errors' }).end(`<p>page for ${code}</p>`);
  });
  const appUrl = await listen(app, '127.0.9.3');
  const errorsUrl = await listen(errors, '127.0.9.4');
  const pages = (up: string) => ({
    upstream: up,
    statuses: [404, 503],
    headers: {
      'X-Namespace': 'web',
      'X-Ingress-Name': 'site',
      'X-Service-Name': 'app',
      'X-Service-Port': '80',
    },
  });
  const none: Upstream = { ...upstream('none', appUrl), endpoints: [] };
  dp = await startTestDataPlane({
    host: '127.0.9.2',
    initialSnapshot: snapshot(
      [
        // The data plane takes the first route that matches: the catch-all last.
        {
          ...route('empty', 'none', '/empty'),
          handler: { type: 'proxy', upstream: 'none', errorPages: pages('errors') },
        },
        {
          ...route('broken', 'app', '/broken'),
          handler: { type: 'proxy', upstream: 'app', errorPages: pages('gone') },
        },
        {
          ...route('pages', 'app', '/'),
          handler: { type: 'proxy', upstream: 'app', errorPages: pages('errors') },
        },
      ],
      [
        upstream('app', appUrl),
        upstream('errors', errorsUrl),
        none,
        upstream('gone', `http://127.0.9.5:${await freePort()}`),
      ],
    ),
  });
});

afterAll(async () => {
  await dp?.close();
  for (const s of [app, errors]) {
    s?.closeAllConnections();
    await new Promise((r) => s?.close(r));
  }
});

describe('error pages', () => {
  it('a listed status is answered by the error upstream, asked as ingress-nginx asks its default backend', async () => {
    const res = await request(`${dp.proxyUrl}/status/404?q=1`, {
      method: 'POST',
      headers: { accept: 'application/json', 'content-type': 'text/plain' },
      body: 'the body',
    });
    expect(res.statusCode).toBe(404);
    expect(res.headers['x-from']).toBe('errors');
    expect(await res.body.text()).toBe('<p>page for 404</p>');
    const a = asked.at(-1)!;
    expect(a.method).toBe('POST');
    expect(a.url).toBe('/');
    expect(a.headers).toMatchObject({
      'x-code': '404',
      'x-format': 'application/json',
      'x-original-uri': '/status/404?q=1',
      'x-request-id': res.headers['x-request-id'],
      'x-namespace': 'web',
      'x-ingress-name': 'site',
      'x-service-name': 'app',
      'x-service-port': '80',
    });
    expect(a.headers['content-length'] ?? '0').toBe('0');
  });

  it('other statuses pass untouched, errors included', async () => {
    for (const code of [200, 500]) {
      const res = await request(`${dp.proxyUrl}/status/${code}`);
      expect(res.statusCode).toBe(code);
      expect(res.headers['x-from']).toBe('app');
      expect(await res.body.text()).toBe(`app says ${code}`);
    }
  });

  it('a request the upstream has no endpoint for is answered by the error upstream, as X-Code 503', async () => {
    const before = asked.length;
    const res = await request(`${dp.proxyUrl}/empty/x`);
    expect(res.statusCode).toBe(503);
    expect(await res.body.text()).toBe('<p>page for 503</p>');
    expect(asked.length).toBe(before + 1);
    expect(asked.at(-1)!.headers['x-original-uri']).toBe('/empty/x');
  });

  it('an error upstream that cannot be reached is the gateway problem (502), not the replaced answer', async () => {
    const res = await request(`${dp.proxyUrl}/broken/status/404`);
    expect(res.statusCode).toBe(502);
    expect(JSON.parse(await res.body.text()).code).toBe('SLC_ERR_UPSTREAM_UNAVAILABLE');
  });
});
