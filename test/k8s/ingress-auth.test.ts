/**
 * ingress-nginx's authentication annotations on a real API server (KUBECONFIG), served by a real
 * controller and two data planes (127.0.5.1 and 127.0.5.2, as two pods) in front of echo back
 * ends of this process (127.0.5.11–12, the pods of Services whose EndpointSlices the test
 * writes: kapi runs no controllers).
 * auth-type: basic: the htpasswd file of auth-secret is checked by both data planes (401 with
 * the realm's Basic challenge, the good user through); the Secret is watched, so a change of it
 * is served; an auth-secret that does not exist answers 500 (never serves unauthenticated), is
 * reported with a Warning Event, and is served once the Secret is created.
 * auth-url: a real authentication service (127.0.5.13) is asked by both data planes before each
 * request: its 2xx lets the request through with auth-response-headers set from its answer, its
 * 401 becomes a redirect to auth-signin with rd=, its 403 is passed back, and a service that
 * does not answer in time (proxy-read-timeout) is a 500.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Controller } from '../../controller/main.ts';
import type { DataPlane } from '../../dataplane/main.ts';
import { expectRequest } from '../gateway-api/env.ts';
import {
  crdsAndNamespace,
  serviceWithPods,
  startControllerIn,
  startDataPlanesIn,
} from '../helpers/controller-on-kapi.ts';
import { http1 } from '../helpers/gateway-api/clients.ts';
import { type EchoServer, startEcho } from '../helpers/gateway-api/echo.ts';
import { deleteAll, kubectl, ok } from '../helpers/kubectl.ts';
import { freePort } from '../helpers/servers.ts';
import { eventsOf, nginxIngress } from '../helpers/ingress-objects.ts';

const NS = `sluice-ingress-auth-${randomBytes(3).toString('hex')}`;
const PLANES = ['127.0.5.1', '127.0.5.2'];
const PODS = { web: '127.0.5.11' };

let planes: DataPlane[];
let authService: Server;
const asked: { url?: string; headers: Record<string, unknown> }[] = [];
let controller: Controller;
const echoes: EchoServer[] = [];

const apply = (yaml: string) => ok(['apply', '-n', NS, '-f', '-'], yaml);
const proxies = () => planes.map((p) => p.proxyUrl);
const b64 = (s: string) => Buffer.from(s).toString('base64');
const basic = (user: string, password: string) => `Basic ${b64(`${user}:${password}`)}`;
// ingress-nginx's documented example: htpasswd -c auth foo (password bar); openssl passwd -apr1 s3cret.
const FOO = 'foo:$apr1$OFG3Xybp$ckL0FHDAkoXYIlH9.cysT0';
const ANN = 'ann:$apr1$12345678$1SnGMP2YoEXzj3WukKVJH1';
const usersSecret = (name: string, lines: string) => `
apiVersion: v1
kind: Secret
metadata: { name: ${name} }
data: { auth: ${b64(lines)} }
`;

beforeAll(async () => {
  await crdsAndNamespace(NS);
  const port = await freePort();
  for (const [svc, host] of Object.entries(PODS))
    echoes.push(await startEcho({ host, port, namespace: NS, pod: `${svc}-1` }));
  planes = await startDataPlanesIn(NS, PLANES, { adminToken: 'auth-token' });
  await apply(serviceWithPods('web', [echoes[0]]));
  // The authentication service: a session cookie is alice; X-Forbid gets 403; /slow never answers.
  authService = createServer((req, res) => {
    asked.push({ url: req.url, headers: req.headers });
    if (req.url === '/slow') return;
    if (req.headers['x-forbid']) res.writeHead(403).end();
    else if ((req.headers.cookie ?? '').includes('session=ok'))
      res.writeHead(200, { 'x-auth-request-user': 'alice' }).end();
    else res.writeHead(401).end();
  });
  authService.listen(0, '127.0.5.13');
  await new Promise((r) => authService.once('listening', r));
  controller = await startControllerIn(NS, 'auth-token', 'sluice-ingress-auth');
}, 60_000);

afterAll(async () => {
  await controller?.close();
  await Promise.all((planes ?? []).map((p) => p.close()));
  await Promise.all(echoes.map((e) => e.close()));
  authService?.closeAllConnections();
  authService?.close();
  await deleteAll('ingress', NS).catch(() => '');
  await kubectl(['delete', 'namespace', NS, '--wait=false']);
});

describe('Ingress auth-type: basic', () => {
  it("answers 401 with the realm's challenge, lets the htpasswd users through, and serves a change of the Secret", async () => {
    await apply(
      `${usersSecret('users', `${FOO}\n`)}\n---\n${nginxIngress('basic', 'basic.example.test', {
        'auth-type': 'basic',
        'auth-secret': 'users',
        'auth-realm': 'Authentication Required - foo',
      })}`,
    );
    const host = 'basic.example.test';
    const [refused] = await expectRequest(proxies(), '/x', { status: 401 }, { headers: { host } });
    expect(refused.headers['www-authenticate']).toBe('Basic realm="Authentication Required - foo"');
    await expectRequest(
      proxies(),
      '/x',
      { status: 401 },
      { headers: { host, authorization: basic('foo', 'baz') } },
    );
    await expectRequest(
      proxies(),
      '/x',
      { namespace: NS, backend: 'web', headers: { Authorization: basic('foo', 'bar') } },
      { headers: { host, authorization: basic('foo', 'bar') } },
    );
    // The Secret is watched: ann added and foo removed is what both data planes check next.
    await apply(usersSecret('users', `${ANN}\n`));
    await expectRequest(
      proxies(),
      '/x',
      { namespace: NS, backend: 'web' },
      { headers: { host, authorization: basic('ann', 's3cret') } },
    );
    await expectRequest(
      proxies(),
      '/x',
      { status: 401 },
      { headers: { host, authorization: basic('foo', 'bar') } },
    );
  });

  it('answers 500 while auth-secret names no Secret (reported), and authenticates once it exists', async () => {
    await apply(
      nginxIngress('later', 'later.example.test', { 'auth-type': 'basic', 'auth-secret': 'later-users' }),
    );
    const host = 'later.example.test';
    const [r] = await expectRequest(
      proxies(),
      '/x',
      { status: 500 },
      { headers: { host, authorization: basic('foo', 'bar') } },
    );
    expect(JSON.parse(r.body).code).toBe('SLC_ERR_BACKEND_INVALID');
    const [event] = await eventsOf(NS, 'later', 'SecretNotFound');
    expect(event.message).toContain(`Secret ${NS}/later-users not found`);
    await apply(usersSecret('later-users', `${FOO}\n`));
    await expectRequest(
      proxies(),
      '/x',
      { namespace: NS, backend: 'web' },
      { headers: { host, authorization: basic('foo', 'bar') } },
    );
    await expectRequest(proxies(), '/x', { status: 401 }, { headers: { host } });
  });
});

describe('Ingress auth-url', () => {
  it('asks the service before each request: 2xx through with its headers, 401 to auth-signin, 403 passed back; no answer in time is 500', async () => {
    const auth = `http://127.0.5.13:${(authService.address() as AddressInfo).port}`;
    await apply(
      `${nginxIngress('ext', 'ext.example.test', {
        'auth-url': `${auth}/check`,
        'auth-signin': 'https://login.example.test/start',
        'auth-response-headers': 'X-Auth-Request-User',
      })}\n---\n${nginxIngress('slow', 'slow.example.test', { 'auth-url': `${auth}/slow`, 'proxy-read-timeout': '1' })}`,
    );
    const host = 'ext.example.test';
    const [moved] = await expectRequest(proxies(), '/page?x=1', { status: 302 }, { headers: { host } });
    expect(moved.headers.location).toBe(
      `https://login.example.test/start?rd=${encodeURIComponent('http://ext.example.test')}${encodeURIComponent('/page?x=1')}`,
    );
    await expectRequest(
      proxies(),
      '/page',
      { namespace: NS, backend: 'web', headers: { 'X-Auth-Request-User': 'alice' } },
      { headers: { host, cookie: 'session=ok', 'x-auth-request-user': 'mallory' } },
    );
    const check = asked.filter((a) => a.url === '/check').at(-1)!;
    expect(check.headers).toMatchObject({
      'x-original-url': 'http://ext.example.test/page',
      'x-original-method': 'GET',
      cookie: 'session=ok',
    });
    await expectRequest(
      proxies(),
      '/page',
      { status: 403 },
      { headers: { host, cookie: 'session=ok', 'x-forbid': '1' } },
    );
    const [slow] = await expectRequest(
      proxies(),
      '/page',
      { status: 500 },
      { headers: { host: 'slow.example.test' } },
    );
    expect(JSON.parse(slow.body).code).toBe('SLC_ERR_EXT_AUTH_FAILED');
    // proxy-read-timeout "1": the sub-request is given one second.
    const t0 = Date.now();
    expect(
      (await http1(`${planes[0].proxyUrl}/page`, { headers: { host: 'slow.example.test' } })).status,
    ).toBe(500);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(900);
    expect(Date.now() - t0).toBeLessThan(5_000);
  });
});
