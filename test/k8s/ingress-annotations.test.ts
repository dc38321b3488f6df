/**
 * ingress-nginx's rewrite-target and canary-by-cookie on a real API server (KUBECONFIG), served
 * by a real controller and two data planes (127.0.3.1 and 127.0.3.2, as two pods) to echo back
 * ends of this process (127.0.3.11–12, the pods of two Services whose EndpointSlices the test
 * writes: kapi runs no controllers). rewrite-target: the back end receives the path built from
 * the path regex's captures, the query kept; a target naming a group a path lacks leaves that
 * path out, reported with a Warning Event naming the annotation, and the Ingress's other path
 * keeps serving. canary-by-cookie: "always" to the canary, "never" to the main backend, others by
 * weight, and the header before the cookie.
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
import { http1 } from '../helpers/gateway-api/clients.ts';
import { type EchoServer, startEcho } from '../helpers/gateway-api/echo.ts';
import { deleteAll, kubectl, ok } from '../helpers/kubectl.ts';
import { freePort } from '../helpers/servers.ts';
import { waitFor } from '../helpers/until.ts';

const NS = `sluice-ingress-rw-${randomBytes(3).toString('hex')}`;
const PLANES = ['127.0.3.1', '127.0.3.2'];
const PODS = { web: '127.0.3.11', next: '127.0.3.12' };

let planes: DataPlane[];
let controller: Controller;
const echoes: EchoServer[] = [];

const apply = (yaml: string) => ok(['apply', '-n', NS, '-f', '-'], yaml);
const proxies = () => planes.map((p) => p.proxyUrl);

beforeAll(async () => {
  await crdsAndNamespace(NS);
  const port = await freePort();
  for (const [svc, host] of Object.entries(PODS))
    echoes.push(await startEcho({ host, port, namespace: NS, pod: `${svc}-1` }));
  planes = await startDataPlanesIn(NS, PLANES, { adminToken: 'rewrite-token' });
  await apply(`${serviceWithPods('web', [echoes[0]])}\n---\n${serviceWithPods('next', [echoes[1]])}`);
  controller = await startControllerIn(NS, 'rewrite-token', 'sluice-ingress-rewrite');
}, 60_000);

afterAll(async () => {
  await controller?.close();
  await Promise.all((planes ?? []).map((p) => p.close()));
  await Promise.all(echoes.map((e) => e.close()));
  // kapi leaves a deleted namespace's objects in place: keep later controllers from serving them.
  await deleteAll('ingress', NS).catch(() => '');
  await kubectl(['delete', 'namespace', NS, '--wait=false']);
});

describe('Ingress rewrite-target', () => {
  it("sends the back end the path built from the regex's captures, the query kept; a path lacking a named group is left out and reported", async () => {
    await apply(`
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: rewrite
  annotations: { nginx.ingress.kubernetes.io/rewrite-target: /$2 }
spec:
  ingressClassName: sluice
  rules:
    - host: rewrite.example.test
      http:
        paths:
          - { path: "/something(/|$)(.*)", pathType: ImplementationSpecific, backend: { service: { name: web, port: { number: 80 } } } }
          - { path: "/one-group/(.*)", pathType: ImplementationSpecific, backend: { service: { name: web, port: { number: 80 } } } }
`);
    const host = { headers: { host: 'rewrite.example.test' } };
    // ingress-nginx's documented example, case-insensitive as nginx's location ~*.
    await expectRequest(
      proxies(),
      '/something/new?q=1',
      { namespace: NS, backend: 'web', path: '/new?q=1' },
      host,
    );
    await expectRequest(proxies(), '/SOMETHING', { namespace: NS, backend: 'web', path: '/' }, host);
    await expectRequest(proxies(), '/something/a/b/', { namespace: NS, backend: 'web', path: '/a/b/' }, host);
    // /one-group/(.*) has no $2: not served (no route matches), and reported naming the annotation.
    await expectRequest(proxies(), '/one-group/x', { status: 404 }, host);
    const events = await waitFor(
      'an InvalidAnnotation Event on rewrite',
      async () =>
        (
          JSON.parse(await ok(['get', 'events', '-n', NS, '-o', 'json'])) as {
            items: { reason: string; message: string; involvedObject: { name: string } }[];
          }
        ).items.filter((e) => e.involvedObject.name === 'rewrite' && e.reason === 'InvalidAnnotation'),
      (items) => items.length === 1,
    );
    expect(events[0].message).toContain(
      'nginx.ingress.kubernetes.io/rewrite-target: "/$2" refers to $2, but the path has 1 capture group',
    );
    expect(events[0].message).toContain('"/one-group/(.*)"');
  });

  it('serves a canary by cookie: "always" to the canary, "never" to main, others by weight; the header first', async () => {
    await apply(`
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: { name: stable }
spec:
  ingressClassName: sluice
  rules:
    - host: cookie.example.test
      http: { paths: [{ path: /, pathType: Prefix, backend: { service: { name: web, port: { number: 80 } } } }] }
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: next
  annotations:
    nginx.ingress.kubernetes.io/canary: "true"
    nginx.ingress.kubernetes.io/canary-weight: "50"
    nginx.ingress.kubernetes.io/canary-by-cookie: use_next
    nginx.ingress.kubernetes.io/canary-by-header: X-Canary
spec:
  ingressClassName: sluice
  rules:
    - host: cookie.example.test
      http: { paths: [{ path: /, pathType: Prefix, backend: { service: { name: next, port: { number: 80 } } } }] }
`);
    const as = (headers: Record<string, string>) => ({
      headers: { host: 'cookie.example.test', ...headers },
    });
    await expectRequest(
      proxies(),
      '/a',
      { namespace: NS, backend: 'next' },
      as({ cookie: 'a=1; use_next=always' }),
    );
    await expectRequest(proxies(), '/a', { namespace: NS, backend: 'web' }, as({ cookie: 'use_next=never' }));
    // canary-by-header ranks first: its "never" wins over the cookie's "always".
    await expectRequest(
      proxies(),
      '/a',
      { namespace: NS, backend: 'web' },
      as({ cookie: 'use_next=always', 'x-canary': 'never' }),
    );
    // Any other value: by weight, half and half; 40 requests reach both (all on one side: 2 in 2^40).
    for (const cookie of ['use_next=maybe', 'other=always']) {
      const seen = new Set<string>();
      for (let i = 0; i < 40; i++) {
        const r = await http1(`${planes[i % 2].proxyUrl}/w/${i}`, as({ cookie }));
        seen.add((r.answer?.pod ?? '').replace(/-\d+$/, ''));
      }
      expect([...seen].sort(), cookie).toEqual(['next', 'web']);
    }
  });
});
