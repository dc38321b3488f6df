/**
 * ingress-nginx's affinity: cookie on a real API server (KUBECONFIG), served by a real controller
 * and two data planes (127.0.5.6 and 127.0.5.7, as two pods) in front of three echo pods of one
 * Service (127.0.5.14–16, its EndpointSlice written by the test: kapi runs no controllers). A
 * client without the cookie is answered with Set-Cookie (the session-cookie-* attributes), and
 * its requests with it go to one pod whichever data plane takes them; new clients spread.
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

const NS = `sluice-ingress-aff-${randomBytes(3).toString('hex')}`;
const PLANES = ['127.0.5.6', '127.0.5.7'];
const PODS = ['127.0.5.14', '127.0.5.15', '127.0.5.16'];

let planes: DataPlane[];
let controller: Controller;
const echoes: EchoServer[] = [];
const apply = (yaml: string) => ok(['apply', '-n', NS, '-f', '-'], yaml);

beforeAll(async () => {
  await crdsAndNamespace(NS);
  const port = await freePort();
  for (const [i, host] of PODS.entries())
    echoes.push(await startEcho({ host, port, namespace: NS, pod: `web-${i}` }));
  planes = await startDataPlanesIn(NS, PLANES, { adminToken: 'affinity-token' });
  await apply(
    serviceWithPods(
      'web',
      PODS.map((host) => ({ host, port })),
    ),
  );
  controller = await startControllerIn(NS, 'affinity-token', 'sluice-ingress-affinity');
}, 60_000);

afterAll(async () => {
  await controller?.close();
  await Promise.all((planes ?? []).map((p) => p.close()));
  await Promise.all(echoes.map((e) => e.close()));
  await deleteAll('ingress', NS).catch(() => '');
  await kubectl(['delete', 'namespace', NS, '--wait=false']);
});

describe('Ingress affinity: cookie', () => {
  it('sets the cookie on a first request, and its requests stick to one pod across both data planes', async () => {
    await apply(`
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: sticky
  annotations:
    nginx.ingress.kubernetes.io/affinity: cookie
    nginx.ingress.kubernetes.io/session-cookie-name: route
    nginx.ingress.kubernetes.io/session-cookie-max-age: "3600"
    nginx.ingress.kubernetes.io/session-cookie-samesite: Lax
spec:
  ingressClassName: sluice
  rules:
    - host: sticky.example.test
      http: { paths: [{ path: /app, pathType: Prefix, backend: { service: { name: web, port: { number: 80 } } } }] }
`);
    const host = 'sticky.example.test';
    const [first] = await expectRequest(
      planes.map((p) => p.proxyUrl),
      '/app/x',
      { namespace: NS, backend: 'web' },
      { headers: { host } },
    );
    expect(String(first.headers['set-cookie'])).toMatch(
      /^route=[0-9a-f]{32}; Path=\/app; Max-Age=3600; SameSite=Lax; HttpOnly$/,
    );
    const pods = new Set<string>();
    for (let client = 0; client < 9; client++) {
      const r = await http1(`${planes[client % 2].proxyUrl}/app/start`, { headers: { host } });
      const cookie = String(r.headers['set-cookie']).split(';')[0];
      const pod = r.answer!.pod;
      pods.add(pod);
      for (let i = 0; i < 6; i++) {
        const again = await http1(`${planes[i % 2].proxyUrl}/app/next`, { headers: { host, cookie } });
        expect(again.answer?.pod, `client ${client}, request ${i}`).toBe(pod);
        expect(again.headers['set-cookie']).toBeUndefined();
      }
    }
    // Nine new clients all on one pod of three would be 3^-8.
    expect(pods.size).toBeGreaterThan(1);
  });
});
