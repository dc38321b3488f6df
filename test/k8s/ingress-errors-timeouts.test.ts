/**
 * ingress-nginx's proxy-send-timeout, auth-secret as "namespace/name", and custom-http-errors
 * with default-backend, on a real API server (KUBECONFIG), served by a real controller and two
 * data planes (127.0.9.11 and 127.0.9.12, as two pods) in front of back ends of this process
 * (127.0.9.21–23, the pods of Services whose EndpointSlices the test writes: kapi runs no
 * controllers).
 * proxy-send-timeout: a back end that takes none of a streamed request body is cut after the
 * timeout (504), long before proxy-read-timeout.
 * auth-secret: "namespace/name" of the Ingress's own namespace authenticates as a bare name;
 * another namespace's Secret is refused: the paths answer 500, a Warning Event names the
 * annotation and its value.
 * custom-http-errors: a listed status of the back end is answered by the default-backend
 * Service, asked with X-Code, X-Format, X-Original-URI, X-Namespace, X-Ingress-Name,
 * X-Service-Name, X-Service-Port and X-Request-ID; other statuses pass; a back end without a
 * ready endpoint is answered there too; an invalid status list is reported by a Warning Event
 * naming the annotation and value while the Ingress's paths keep serving.
 */
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type IncomingMessage, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
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
import { type EchoServer, startEcho } from '../helpers/gateway-api/echo.ts';
import { deleteAll, kubectl, ok } from '../helpers/kubectl.ts';
import { freePort } from '../helpers/servers.ts';
import { eventsOf, nginxIngress } from '../helpers/ingress-objects.ts';

const NS = `sluice-ingress-errs-${randomBytes(3).toString('hex')}`;
const OTHER = `${NS}-other`;
const PLANES = ['127.0.9.11', '127.0.9.12'];
const PODS = { web: '127.0.9.21', errors: '127.0.9.22' };
const STUCK = '127.0.9.23';

let planes: DataPlane[];
let controller: Controller;
const echoes: EchoServer[] = [];
let stuck: Server;
/** POSTs the stuck back end got (it never reads their bodies). */
const held: IncomingMessage[] = [];

const apply = (yaml: string, ns = NS) => ok(['apply', '-n', ns, '-f', '-'], yaml);
const proxies = () => planes.map((p) => p.proxyUrl);
const b64 = (s: string) => Buffer.from(s).toString('base64');
// ingress-nginx's documented example: htpasswd -c auth foo (password bar).
const FOO = 'foo:$apr1$OFG3Xybp$ckL0FHDAkoXYIlH9.cysT0';
const basic = (user: string, password: string) => `Basic ${b64(`${user}:${password}`)}`;

beforeAll(async () => {
  await crdsAndNamespace(NS);
  await ok(['create', 'namespace', OTHER]);
  const port = await freePort();
  for (const [svc, host] of Object.entries(PODS))
    echoes.push(await startEcho({ host, port, namespace: NS, pod: `${svc}-1` }));
  // Answers a GET; takes none of a POST's body and never answers it.
  stuck = createServer((req, res) => {
    if (req.method === 'GET') return void res.end('ready');
    req.pause();
    held.push(req);
  });
  stuck.listen(0, STUCK);
  await once(stuck, 'listening');
  planes = await startDataPlanesIn(NS, PLANES, { adminToken: 'errors-token' });
  await apply(
    [
      serviceWithPods('web', [echoes[0]]),
      serviceWithPods('errors', [echoes[1]]),
      serviceWithPods('stuck', [{ host: STUCK, port: (stuck.address() as AddressInfo).port }]),
      // A Service whose one endpoint is not ready.
      `
apiVersion: v1
kind: Service
metadata: { name: down }
spec: { ports: [{ name: http, port: 80 }] }
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: { name: down-1, labels: { kubernetes.io/service-name: down } }
addressType: IPv4
ports: [{ name: http, port: ${port} }]
endpoints: [{ addresses: ["${PODS.web}"], conditions: { ready: false } }]
`,
    ].join('\n---\n'),
  );
  controller = await startControllerIn(NS, 'errors-token', 'sluice-ingress-errors');
}, 60_000);

afterAll(async () => {
  await controller?.close();
  await Promise.all((planes ?? []).map((p) => p.close()));
  await Promise.all(echoes.map((e) => e.close()));
  for (const r of held) r.destroy();
  stuck?.closeAllConnections();
  stuck?.close();
  await deleteAll('ingress', NS).catch(() => '');
  await kubectl(['delete', 'namespace', NS, OTHER, '--wait=false']);
});

/** POSTs a large body as fast as the gateway takes it, until an answer comes. */
async function postUntilAnswered(url: string, host: string) {
  const t0 = performance.now();
  const req = httpRequest(url, { method: 'POST', headers: { host } });
  req.on('error', () => {}); // the gateway may close while the body still goes
  const answered = once(req, 'response') as Promise<[IncomingMessage]>;
  let stop = false;
  void answered.then(() => {
    stop = true;
  });
  const chunk = Buffer.alloc(64 * 1024, 'x');
  void (async () => {
    for (let i = 0; i < 8192 && !stop; i++)
      if (!req.write(chunk)) await Promise.race([once(req, 'drain'), answered]);
    if (!stop) req.end();
  })();
  const [res] = await answered;
  let body = '';
  for await (const c of res) body += c;
  return { status: res.statusCode, body, ms: performance.now() - t0 };
}

describe('Ingress proxy-send-timeout', () => {
  it('cuts a back end that takes none of the streamed body after the timeout: 504, not proxy-read-timeout', async () => {
    const host = 'send.example.test';
    await apply(
      nginxIngress('send', host, { 'proxy-send-timeout': '1', 'proxy-read-timeout': '60' }, 'stuck'),
    );
    await expectRequest(proxies(), '/', { status: 200 }, { headers: { host } });
    for (const url of proxies()) {
      const r = await postUntilAnswered(`${url}/upload`, host);
      expect(r.status).toBe(504);
      expect(JSON.parse(r.body).code).toBe('SLC_ERR_UPSTREAM_TIMEOUT');
      expect(r.ms).toBeGreaterThanOrEqual(1_000);
      expect(r.ms).toBeLessThan(15_000);
    }
    expect(held.length).toBe(2);
  });
});

describe('Ingress auth-secret as namespace/name', () => {
  it("authenticates with the Ingress's own namespace's Secret; another namespace's is refused (500, an Event naming it)", async () => {
    const secret = `
apiVersion: v1
kind: Secret
metadata: { name: users }
data: { auth: ${b64(`${FOO}\n`)} }
`;
    await apply(secret);
    await apply(secret, OTHER);
    await apply(
      `${nginxIngress('own-ns', 'own.example.test', { 'auth-type': 'basic', 'auth-secret': `${NS}/users` })}\n---\n${nginxIngress(
        'other-ns',
        'other.example.test',
        { 'auth-type': 'basic', 'auth-secret': `${OTHER}/users` },
      )}`,
    );
    const own = 'own.example.test';
    await expectRequest(proxies(), '/x', { status: 401 }, { headers: { host: own } });
    await expectRequest(
      proxies(),
      '/x',
      { namespace: NS, backend: 'web' },
      { headers: { host: own, authorization: basic('foo', 'bar') } },
    );
    const [refused] = await expectRequest(
      proxies(),
      '/x',
      { status: 500 },
      { headers: { host: 'other.example.test', authorization: basic('foo', 'bar') } },
    );
    expect(JSON.parse(refused.body).code).toBe('SLC_ERR_BACKEND_INVALID');
    const events = await eventsOf(NS, 'other-ns', 'InvalidAnnotation');
    const event = events.find((e) => e.message.includes('auth-secret:'))!;
    expect(event.type).toBe('Warning');
    expect(event.message).toContain(`nginx.ingress.kubernetes.io/auth-secret: "${OTHER}/users"`);
    expect(event.message).toContain(`names a Secret of namespace ${OTHER}`);
  });
});

describe('Ingress custom-http-errors with default-backend', () => {
  it('answers the listed statuses from the default backend, asked as ingress-nginx asks it; others pass', async () => {
    const host = 'pages.example.test';
    await apply(
      nginxIngress('pages', host, { 'custom-http-errors': '404,503', 'default-backend': 'errors' }),
    );
    const [page] = await expectRequest(
      proxies(),
      '/status/404',
      {
        namespace: NS,
        backend: 'errors',
        path: '/',
        headers: {
          'X-Code': '404',
          'X-Format': 'text/html',
          'X-Original-Uri': '/status/404',
          'X-Namespace': NS,
          'X-Ingress-Name': 'pages',
          'X-Service-Name': 'web',
          'X-Service-Port': '80',
        },
      },
      { headers: { host, accept: 'text/html' } },
    );
    expect(page.answer!.headers['X-Request-Id']?.[0]).toBe(page.headers['x-request-id']);
    // Not listed: the back end's own answer.
    await expectRequest(proxies(), '/status/500', { status: 500 }, { headers: { host } });
    await expectRequest(proxies(), '/ok', { namespace: NS, backend: 'web' }, { headers: { host } });
  });

  it('answers from the default backend when the Service has no ready endpoint (X-Code 503)', async () => {
    const host = 'down.example.test';
    await apply(nginxIngress('down', host, { 'default-backend': 'errors' }, 'down'));
    await expectRequest(
      proxies(),
      '/x',
      { namespace: NS, backend: 'errors', path: '/', headers: { 'X-Code': '503', 'X-Service-Name': 'down' } },
      { headers: { host } },
    );
  });

  it('reports an invalid status list with a Warning Event naming it and its value; the paths keep serving', async () => {
    const host = 'bad-pages.example.test';
    await apply(
      nginxIngress('bad-pages', host, { 'custom-http-errors': '404,abc', 'default-backend': 'errors' }),
    );
    // Served, the 404 passed through as the back end's.
    await expectRequest(proxies(), '/ok', { namespace: NS, backend: 'web' }, { headers: { host } });
    await expectRequest(proxies(), '/status/404', { status: 404 }, { headers: { host } });
    const [event] = await eventsOf(NS, 'bad-pages', 'InvalidAnnotation');
    expect(event.type).toBe('Warning');
    expect(event.message).toContain('nginx.ingress.kubernetes.io/custom-http-errors: "404,abc"');
  });
});
