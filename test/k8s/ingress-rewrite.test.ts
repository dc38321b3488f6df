/**
 * ingress-nginx's rewrite-target on a real API server (KUBECONFIG), served by a real controller
 * and two data planes (127.0.3.1 and 127.0.3.2, as two pods) to an echo back end of this process
 * (127.0.3.11, the pod of a Service whose EndpointSlice the test writes: kapi runs no
 * controllers): the back end receives the path built from the path regex's captures, the query
 * kept; a target naming a group a path lacks leaves that path out, reported with a Warning Event
 * naming the annotation, and the Ingress's other path keeps serving.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Controller } from '../../controller/main.ts';
import type { DataPlane } from '../../dataplane/main.ts';
import { expectRequest } from '../gateway-api/env.ts';
import { crdsAndNamespace, startControllerIn, startDataPlanesIn } from '../helpers/controller-on-kapi.ts';
import { type EchoServer, startEcho } from '../helpers/gateway-api/echo.ts';
import { kubectl, ok } from '../helpers/kubectl.ts';
import { freePort } from '../helpers/servers.ts';
import { waitFor } from '../helpers/until.ts';

const NS = `sluice-ingress-rw-${randomBytes(3).toString('hex')}`;
const PLANES = ['127.0.3.1', '127.0.3.2'];
const POD = '127.0.3.11';

let planes: DataPlane[];
let controller: Controller;
let echo: EchoServer;

const apply = (yaml: string) => ok(['apply', '-n', NS, '-f', '-'], yaml);
const proxies = () => planes.map((p) => p.proxyUrl);

beforeAll(async () => {
  await crdsAndNamespace(NS);
  echo = await startEcho({ host: POD, port: await freePort(), namespace: NS, pod: 'web-1' });
  planes = await startDataPlanesIn(NS, PLANES, { adminToken: 'rewrite-token' });
  await apply(`
apiVersion: v1
kind: Service
metadata: { name: web }
spec: { ports: [{ name: http, port: 80, targetPort: 3000 }] }
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: { name: web-1, labels: { kubernetes.io/service-name: web } }
addressType: IPv4
ports: [{ name: http, port: ${echo.port} }]
endpoints: [{ addresses: ["${POD}"], conditions: { ready: true } }]
`);
  controller = await startControllerIn(NS, 'rewrite-token', 'sluice-ingress-rewrite');
}, 60_000);

afterAll(async () => {
  await controller?.close();
  await Promise.all((planes ?? []).map((p) => p.close()));
  await echo?.close();
  // kapi leaves a deleted namespace's objects in place: keep later controllers from serving them.
  await kubectl(['delete', 'ingress', '--all', '-n', NS]);
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
});
