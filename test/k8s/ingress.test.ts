/**
 * Ingresses on a real API server (KUBECONFIG), served by a real controller and two data planes
 * (127.0.2.1 and 127.0.2.2, as two pods) to echo back ends of this process (127.0.2.11–13, as
 * pods of two Services whose EndpointSlices the test writes: kapi runs no controllers). What
 * deliverable 1 of issue 26 promises, end to end: routing by host and path type, the default
 * backend, TLS from a Secret on the data planes' TLS port (and ingress-nginx's ssl-redirect),
 * class filtering, status.loadBalancer from --publish-service, and a Warning Event naming an
 * annotation Sluice does not honour.
 */
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
import { type EchoServer, startEcho } from '../helpers/gateway-api/echo.ts';
import { http1 } from '../helpers/gateway-api/clients.ts';
import { deleteAll, kubectl, ok } from '../helpers/kubectl.ts';
import { freePort } from '../helpers/servers.ts';
import { waitFor } from '../helpers/until.ts';
import { makePki, type Pki } from '../tls/pki.ts';

const NS = `sluice-ingress-${randomBytes(3).toString('hex')}`;
const PLANES = ['127.0.2.1', '127.0.2.2'];
const PODS = { web: ['127.0.2.11', '127.0.2.12'], fallback: ['127.0.2.13'] };

let planes: DataPlane[];
let controller: Controller;
let pki: Pki;
const echoes: EchoServer[] = [];

const apply = (yaml: string) => ok(['apply', '-n', NS, '-f', '-'], yaml);
const proxies = () => planes.map((p) => p.proxyUrl);

beforeAll(async () => {
  await crdsAndNamespace(NS);
  // One port for every pod (each on its own address), as a Deployment's containers have.
  const port = await freePort();
  for (const [svc, hosts] of Object.entries(PODS))
    for (const [i, host] of hosts.entries())
      echoes.push(await startEcho({ host, port, namespace: NS, pod: `${svc}-${i + 1}` }));
  planes = await startDataPlanesIn(NS, PLANES, { httpsPort: await freePort(), adminToken: 'ingress-token' });
  pki = makePki();
  const cert = pki.leaf('secure', ['secure.example.test']);
  await apply(`${serviceWithPods('web', echoes.slice(0, 2))}
---
${serviceWithPods('fallback', echoes.slice(2))}
---
apiVersion: v1
kind: Secret
metadata: { name: secure-cert }
type: kubernetes.io/tls
stringData:
  tls.crt: ${JSON.stringify(cert.cert)}
  tls.key: ${JSON.stringify(cert.key)}
---
apiVersion: v1
kind: Service
metadata: { name: sluice-proxy }
spec: { type: LoadBalancer, clusterIP: 10.96.0.7, ports: [{ name: http, port: 80, targetPort: 8080 }] }
`);
  controller = await startControllerIn(NS, 'ingress-token', 'sluice-ingress', {
    publishService: `${NS}/sluice-proxy`,
  });
}, 60_000);

afterAll(async () => {
  await controller?.close();
  await Promise.all((planes ?? []).map((p) => p.close()));
  await Promise.all(echoes.map((e) => e.close()));
  pki?.remove();
  // kapi leaves a deleted namespace's objects in place: a controller watching every namespace in
  // a later test would serve these Ingresses (the default backend takes every request).
  await deleteAll('ingress', NS).catch(() => '');
  await kubectl(['delete', 'namespace', NS, '--wait=false']);
});

describe('Ingress: routing, TLS, default backend, class filtering, status', () => {
  it("routes by host and path type to the Services' endpoints, with the default backend for the rest", async () => {
    await apply(`
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: { name: shop }
spec:
  ingressClassName: sluice
  defaultBackend: { service: { name: fallback, port: { number: 80 } } }
  rules:
    - host: shop.example.test
      http:
        paths:
          - { path: /api, pathType: Prefix, backend: { service: { name: web, port: { name: http } } } }
          - { path: /exact, pathType: Exact, backend: { service: { name: web, port: { number: 80 } } } }
          - { path: /legacy, pathType: ImplementationSpecific, backend: { service: { name: web, port: { number: 80 } } } }
    - host: "*.wild.example.test"
      http:
        paths:
          - { path: /, pathType: Prefix, backend: { service: { name: web, port: { number: 80 } } } }
`);
    const host = (h: string) => ({ headers: { host: h } });
    await expectRequest(
      proxies(),
      '/api/items',
      { namespace: NS, backend: 'web' },
      host('shop.example.test'),
    );
    await expectRequest(proxies(), '/api', { namespace: NS, backend: 'web' }, host('shop.example.test'));
    await expectRequest(proxies(), '/exact', { namespace: NS, backend: 'web' }, host('shop.example.test'));
    await expectRequest(proxies(), '/legacy/x', { namespace: NS, backend: 'web' }, host('shop.example.test'));
    // Prefix is element-wise; Exact is exact; another host: the default backend takes them.
    await expectRequest(
      proxies(),
      '/apis',
      { namespace: NS, backend: 'fallback' },
      host('shop.example.test'),
    );
    await expectRequest(
      proxies(),
      '/exact/more',
      { namespace: NS, backend: 'fallback' },
      host('shop.example.test'),
    );
    await expectRequest(
      proxies(),
      '/api/items',
      { namespace: NS, backend: 'fallback' },
      host('other.example.test'),
    );
    // "*.wild.example.test" takes one label, not two (the Ingress spec's wildcard).
    await expectRequest(proxies(), '/x', { namespace: NS, backend: 'web' }, host('a.wild.example.test'));
    await expectRequest(
      proxies(),
      '/x',
      { namespace: NS, backend: 'fallback' },
      host('a.b.wild.example.test'),
    );
    // Both web pods take requests (the EndpointSlice's two endpoints, balanced).
    const pods = new Set<string>();
    for (let i = 0; i < 8; i++) {
      const r = await http1(`${planes[0].proxyUrl}/api/${i}`, host('shop.example.test'));
      pods.add(r.answer?.pod ?? '');
    }
    expect([...pods].sort()).toEqual(['web-1', 'web-2']);
  });

  it('serves spec.tls from its Secret on the TLS port by SNI, and redirects plain HTTP for that host (ssl-redirect)', async () => {
    await apply(`
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: { name: secure }
spec:
  ingressClassName: sluice
  tls: [{ hosts: [secure.example.test], secretName: secure-cert }]
  rules:
    - host: secure.example.test
      http: { paths: [{ path: /, pathType: Prefix, backend: { service: { name: web, port: { number: 80 } } } }] }
`);
    const tls = { ca: pki.ca, servername: 'secure.example.test', headers: { host: 'secure.example.test' } };
    // Until the snapshot with the certificate arrives, the handshake fails (no certificate yet).
    await waitFor(
      'the certificate on every data plane',
      () => Promise.all(planes.map((p) => http1(`${p.httpsUrl}/`, tls).catch(() => null))),
      (rs) => rs.every((r) => r?.status === 200),
    );
    await expectRequest(
      planes.map((p) => p.httpsUrl),
      '/paid',
      { namespace: NS, backend: 'web' },
      tls,
    );
    const [plain] = await expectRequest(
      proxies(),
      '/paid?x=1',
      { status: 308 },
      {
        headers: { host: 'secure.example.test' },
      },
    );
    expect(plain.headers.location).toBe('https://secure.example.test/paid?x=1');
  });

  it('serves only its class: ingressClassName or the legacy annotation naming sluice; never another', async () => {
    // kapi does not serve the IngressClass API (the controller runs without it: classes by name);
    // IngressClass objects and the default class are covered by test/golden/ingress/classes.
    await apply(`
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: legacy
  annotations: { kubernetes.io/ingress.class: sluice }
spec:
  rules:
    - host: classes.example.test
      http: { paths: [{ path: /legacy, pathType: Prefix, backend: { service: { name: web, port: { number: 80 } } } }] }
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: { name: theirs }
spec:
  ingressClassName: nginx
  rules:
    - host: classes.example.test
      http: { paths: [{ path: /theirs, pathType: Prefix, backend: { service: { name: web, port: { number: 80 } } } }] }
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: theirs-legacy
  annotations: { kubernetes.io/ingress.class: nginx }
spec:
  rules:
    - host: classes.example.test
      http: { paths: [{ path: /theirs-legacy, pathType: Prefix, backend: { service: { name: web, port: { number: 80 } } } }] }
`);
    const host = { headers: { host: 'classes.example.test' } };
    await expectRequest(proxies(), '/legacy', { namespace: NS, backend: 'web' }, host);
    // The nginx Ingresses are not served: their requests fall to the shop Ingress's default backend.
    await expectRequest(proxies(), '/theirs', { namespace: NS, backend: 'fallback' }, host);
    await expectRequest(proxies(), '/theirs-legacy', { namespace: NS, backend: 'fallback' }, host);
    // Moved to another class, an Ingress stops being served.
    await ok(['annotate', 'ingress', 'legacy', '-n', NS, '--overwrite', 'kubernetes.io/ingress.class=nginx']);
    await expectRequest(proxies(), '/legacy', { namespace: NS, backend: 'fallback' }, host);
  });

  it("writes status.loadBalancer from --publish-service (cluster IP, then its load balancer's), never on others' Ingresses", async () => {
    type Ing = { status?: { loadBalancer?: { ingress?: { ip?: string; hostname?: string }[] } } };
    const get = async (name: string) =>
      JSON.parse(await ok(['get', 'ingress', name, '-n', NS, '-o', 'json'])) as Ing;
    await waitFor(
      'shop shows the cluster IP of sluice-proxy',
      () => get('shop'),
      (i) => JSON.stringify(i.status?.loadBalancer?.ingress) === '[{"ip":"10.96.0.7"}]',
    );
    // As a cloud's load-balancer controller would, through the status subresource (kapi has none
    // for Services: there the status is written with the object).
    const core = JSON.parse(await ok(['get', '--raw', '/api/v1'])) as { resources: { name: string }[] };
    const status = core.resources.some((r) => r.name === 'services/status') ? ['--subresource=status'] : [];
    await ok([
      'patch',
      'service',
      'sluice-proxy',
      ...status,
      '-n',
      NS,
      '--type=merge',
      '-p',
      '{"status":{"loadBalancer":{"ingress":[{"ip":"203.0.113.7"}]}}}',
    ]);
    await waitFor(
      "shop shows the load balancer's address",
      () => get('shop'),
      (i) => JSON.stringify(i.status?.loadBalancer?.ingress) === '[{"ip":"203.0.113.7"}]',
    );
    expect((await get('theirs')).status?.loadBalancer?.ingress ?? []).toEqual([]);
  });

  it('reports an annotation it does not honour with a Warning Event naming it; the Ingress keeps serving', async () => {
    await apply(`
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: annotated
  annotations:
    nginx.ingress.kubernetes.io/proxy-buffering: "on"
    nginx.ingress.kubernetes.io/server-snippet: "return 200;"
spec:
  ingressClassName: sluice
  rules:
    - host: annotated.example.test
      http: { paths: [{ path: /, pathType: Prefix, backend: { service: { name: web, port: { number: 80 } } } }] }
`);
    await expectRequest(
      proxies(),
      '/',
      { namespace: NS, backend: 'web' },
      { headers: { host: 'annotated.example.test' } },
    );
    type Event = {
      type: string;
      reason: string;
      message: string;
      involvedObject: { kind: string; apiVersion: string };
    };
    const events = await waitFor(
      'Warning Events on Ingress annotated',
      async () =>
        (
          JSON.parse(await ok(['get', 'events', '-n', NS, '-o', 'json'])) as {
            items: (Event & { involvedObject: { name: string } })[];
          }
        ).items.filter((e) => e.involvedObject.kind === 'Ingress' && e.involvedObject.name === 'annotated'),
      (items) => items.length >= 2,
    );
    const seen = events.map((e) => [e.type, e.reason, e.involvedObject.apiVersion, e.message]).sort();
    expect(seen).toEqual([
      [
        'Warning',
        'AnnotationNotHonoured',
        'networking.k8s.io/v1',
        'metadata.annotations[nginx.ingress.kubernetes.io/proxy-buffering]: nginx.ingress.kubernetes.io/proxy-buffering is not honoured by Sluice',
      ],
      [
        'Warning',
        'SnippetNotExecuted',
        'networking.k8s.io/v1',
        'metadata.annotations[nginx.ingress.kubernetes.io/server-snippet]: nginx.ingress.kubernetes.io/server-snippet is never executed: Sluice runs no configuration text from objects',
      ],
    ]);
    const metrics = await (await fetch(`${controller.metricsUrl}/metrics`)).text();
    expect(metrics).toMatch(
      /sluice_controller_ingress_annotations_not_honoured\{annotation="nginx.ingress.kubernetes.io\/proxy-buffering",reason="AnnotationNotHonoured"\} 1/,
    );
  });

  it('honours ingress-nginx annotations: use-regex, app-root, permanent-redirect, limit-rps, enable-cors; a bad value is reported, the rest serves', async () => {
    await apply(`
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: nginx-style
  annotations:
    nginx.ingress.kubernetes.io/use-regex: "true"
    nginx.ingress.kubernetes.io/app-root: /app
    nginx.ingress.kubernetes.io/limit-rps: "2"
    nginx.ingress.kubernetes.io/enable-cors: "true"
    nginx.ingress.kubernetes.io/cors-allow-origin: https://app.example.test
    nginx.ingress.kubernetes.io/proxy-read-timeout: soon
    nginx.ingress.kubernetes.io/upstream-vhost: internal.example.test
spec:
  ingressClassName: sluice
  rules:
    - host: nginx.example.test
      http:
        paths:
          - { path: "/v[0-9]+/users", pathType: ImplementationSpecific, backend: { service: { name: web, port: { number: 80 } } } }
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: moved
  annotations:
    nginx.ingress.kubernetes.io/permanent-redirect: https://new.example.test/landing
spec:
  ingressClassName: sluice
  rules:
    - host: moved.example.test
      http: { paths: [{ path: /, pathType: Prefix, backend: { service: { name: web, port: { number: 80 } } } }] }
`);
    const host = { headers: { host: 'nginx.example.test' } };
    // Both pods run it before the first request: asked while only one did, the other's answers
    // failed the check and the asking went on, past limit-rps on the first (a 429; CI, loaded).
    await waitFor(
      'both pods run the nginx-style Ingress',
      () => planes.map((p) => p.holder.snapshot?.table.routes.some((r) => r.source.name === 'nginx-style')),
      (running) => running.every(Boolean),
    );
    // use-regex: case-insensitive, from the start of the path.
    await expectRequest(proxies(), '/V2/users/7', { namespace: NS, backend: 'web' }, host);
    await expectRequest(proxies(), '/vx/users', { namespace: NS, backend: 'fallback' }, host);
    // upstream-vhost: the back end gets that Host (its connections still go to the endpoints);
    // asked until limit-rps lets one through.
    const vhost = await waitFor(
      'a request past limit-rps',
      () => http1(`${planes[0].proxyUrl}/v3/users`, host),
      (r) => r.status === 200,
    );
    expect(vhost.answer?.host).toBe('internal.example.test');
    const [root] = await expectRequest(proxies(), '/', { status: 302 }, host);
    expect(root.headers.location).toBe('http://nginx.example.test/app');
    const [moved] = await expectRequest(
      proxies(),
      '/old?q=1',
      { status: 301 },
      { headers: { host: 'moved.example.test' } },
    );
    expect(moved.headers.location).toBe('https://new.example.test/landing?q=1');
    // enable-cors: a preflight from the allowed origin is answered for it.
    const preflight = await http1(`${planes[0].proxyUrl}/v1/users`, {
      method: 'OPTIONS',
      headers: {
        host: 'nginx.example.test',
        origin: 'https://app.example.test',
        'access-control-request-method': 'PUT',
      },
    });
    expect(preflight.headers['access-control-allow-origin']).toBe('https://app.example.test');
    // limit-rps 2 per process: after a quiet second (the requests above counted too), five in a
    // row span at most two one-second windows: some pass, some get 429 with Retry-After.
    await new Promise((r) => setTimeout(r, 1_100));
    const burst: Awaited<ReturnType<typeof http1>>[] = [];
    for (let i = 0; i < 5; i++) burst.push(await http1(`${planes[1].proxyUrl}/v1/users`, host));
    const statuses = burst.map((r) => r.status);
    expect(statuses.filter((s) => s === 200).length, String(statuses)).toBeGreaterThan(0);
    expect(statuses.filter((s) => s === 429).length, String(statuses)).toBeGreaterThan(0);
    expect(burst.find((r) => r.status === 429)?.headers['retry-after']).toBeDefined();
    // The unreadable proxy-read-timeout is reported, naming it and its value; the rest served above.
    await waitFor(
      'an InvalidAnnotation Event on nginx-style',
      async () =>
        (
          JSON.parse(await ok(['get', 'events', '-n', NS, '-o', 'json'])) as {
            items: { reason: string; message: string; involvedObject: { name: string } }[];
          }
        ).items.filter((e) => e.involvedObject.name === 'nginx-style' && e.reason === 'InvalidAnnotation'),
      (items) =>
        items.length === 1 &&
        items[0].message.includes(
          'nginx.ingress.kubernetes.io/proxy-read-timeout: "soon" must be whole seconds',
        ),
    );
  });

  it('serves a canary Ingress: by header (always, never) and by weight, on its main path', async () => {
    await apply(`
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: { name: stable }
spec:
  ingressClassName: sluice
  rules:
    - host: canary.example.test
      http: { paths: [{ path: /, pathType: Prefix, backend: { service: { name: web, port: { number: 80 } } } }] }
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: next
  annotations:
    nginx.ingress.kubernetes.io/canary: "true"
    nginx.ingress.kubernetes.io/canary-weight: "50"
    nginx.ingress.kubernetes.io/canary-by-header: X-Canary
spec:
  ingressClassName: sluice
  rules:
    - host: canary.example.test
      http: { paths: [{ path: /, pathType: Prefix, backend: { service: { name: fallback, port: { number: 80 } } } }] }
`);
    const as = (canary?: string) => ({
      headers: { host: 'canary.example.test', ...(canary && { 'x-canary': canary }) },
    });
    // "never" first: until the data planes run the Ingress `stable`, canary.example.test falls to
    // the default backend (fallback) of `shop` above, which "always" would take for the canary.
    // Once "never" reaches web, "always" can reach fallback only through the canary's route.
    await expectRequest(proxies(), '/a', { namespace: NS, backend: 'web' }, as('never'));
    await expectRequest(proxies(), '/a', { namespace: NS, backend: 'fallback' }, as('always'));
    // By weight, half and half: 40 requests reach both (all on one side: 2 in 2^40).
    const seen = new Set<string>();
    for (let i = 0; i < 40; i++) {
      const r = await http1(`${planes[i % 2].proxyUrl}/w/${i}`, as());
      seen.add((r.answer?.pod ?? '').replace(/-\d+$/, ''));
    }
    expect([...seen].sort()).toEqual(['fallback', 'web']);
  });
});
