/**
 * The admin port over HTTPS as the chart wires it (admin.tls.enabled, the certificate the chart
 * generates): rendered, applied, the controller and a data plane run as their Deployments say
 * (local-pod.ts; the data plane's probe over HTTPS unchecked, as the kubelet's). The controller
 * pushes over TLS, checking the pod's certificate against the CA for the chart's server name: a
 * route is Programmed and served. An impostor on the admin Service's endpoints, with a
 * certificate for the same name from another CA, gets no request at all: neither the token nor
 * a snapshot (which carries TLS keys) leaves the controller.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { deleteAll, ok } from '../../helpers/kubectl.ts';
import { metricValue, stopAllSluice } from '../../helpers/processes.ts';
import { startUpstream, type Upstream } from '../../helpers/servers.ts';
import { makePki, type Pki } from '../../tls/pki.ts';
import { CHART, find, type Manifest, render, renderText } from '../helm.ts';
import { until } from './chart-on-kapi.ts';
import { type LocalPod, startLocalPod } from './local-pod.ts';

const NS = `sluice-chart-tls-${randomBytes(3).toString('hex')}`;
const SERVER_NAME = `gw-sluice-admin.${NS}.svc`;
const VALUES = {
  admin: { tls: { enabled: true } },
  dataplane: { replicas: 1, preStopSeconds: 0, drainSeconds: 1 },
  controller: { replicas: 1, leaseSeconds: 3 },
  proxy: { service: { type: 'ClusterIP' } },
};

let manifests: Manifest[];
let up: Upstream;
let plane: LocalPod;
let controller: LocalPod;
let ca: string;
let other: Pki;
const impostorSeen: string[] = [];
let impostor: ReturnType<typeof createServer>;

const slice = (name: string, port: number) => `
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: { name: ${name}, labels: { kubernetes.io/service-name: gw-sluice-admin } }
addressType: IPv4
ports: [{ name: admin, port: ${port} }]
endpoints: [{ addresses: ["127.0.0.1"], conditions: { ready: false }, targetRef: { kind: Pod, name: ${name} } }]
`;
const programmed = async () => {
  const o = JSON.parse(await ok(['get', 'gatewayroute', 'secure-admin', '-n', NS, '-o', 'json']));
  return (o.status?.conditions ?? []).find((c: { type: string }) => c.type === 'Programmed') ?? null;
};

beforeAll(async () => {
  up = await startUpstream();
  await ok(['apply', '--server-side', '--force-conflicts', '-f', join(CHART, 'crds')]);
  await ok(['wait', '--for=condition=Established', '--timeout=30s', 'crd/gatewayroutes.sluice.dev']);
  await ok(['create', 'namespace', NS]);
  const opts = { namespace: NS, values: VALUES };
  manifests = await render(opts);
  // The Secret applied is the one rendered now (a second render would generate another CA).
  await ok(['apply', '-n', NS, '-f', '-'], await renderText(opts));
  const secret = JSON.parse(await ok(['get', 'secret', 'gw-sluice-admin-tls', '-n', NS, '-o', 'json']));
  ca = Buffer.from(secret.data['ca.crt'], 'base64').toString();

  plane = await startLocalPod(find(manifests, 'Deployment', 'gw-sluice-dataplane'), NS, 0, 'livenessProbe');
  await ok(['apply', '-n', NS, '-f', '-'], slice(plane.name, plane.ports.admin));
  controller = await startLocalPod(
    find(manifests, 'Deployment', 'gw-sluice-controller'),
    NS,
    0,
    'readinessProbe',
  );

  other = makePki();
  const leaf = other.leaf(SERVER_NAME, [SERVER_NAME]);
  impostor = createServer(
    { cert: readFileSync(leaf.certFile), key: readFileSync(leaf.keyFile) },
    (req, res) => {
      impostorSeen.push(`${req.method} ${req.url} ${req.headers.authorization ?? ''}`);
      res.end('{"hash":""}');
    },
  );
  await new Promise<void>((r) => impostor.listen(0, '127.0.0.1', r));
}, 120_000);

afterAll(async () => {
  await stopAllSluice();
  await up?.close();
  impostor?.close();
  other?.remove();
  await deleteAll('gatewayroutes', NS).catch(() => {});
}, 30_000);

it('the processes run with the TLS flags of the chart: cert and key on the data plane, the CA and the name on the controller', () => {
  const args = (d: string) =>
    find(manifests, 'Deployment', d).spec.template.spec.containers[0].args as string[];
  expect(args('gw-sluice-dataplane')).toEqual(
    expect.arrayContaining(['--admin-tls-cert', '/etc/sluice/admin-tls/tls.crt']),
  );
  const ctl = args('gw-sluice-controller');
  expect(ctl[ctl.indexOf('--admin-scheme') + 1]).toBe('https');
  expect(ctl[ctl.indexOf('--admin-tls-server-name') + 1]).toBe(SERVER_NAME);
  expect(plane.args.includes('--admin-tls-key')).toBe(true);
});

it("the admin port speaks only TLS, with a certificate the chart's CA signed for the server name", async () => {
  const port = plane.ports.admin;
  await expect(fetch(`http://127.0.0.1:${port}/healthz`)).rejects.toThrow();
  const checked = new Agent({ connect: { ca, servername: SERVER_NAME } });
  const r = await request(`https://127.0.0.1:${port}/healthz`, { dispatcher: checked });
  expect(r.statusCode).toBe(200);
  await r.body.dump();
  const stranger = new Agent({ connect: { ca: other.ca, servername: SERVER_NAME } });
  await expect(request(`https://127.0.0.1:${port}/healthz`, { dispatcher: stranger })).rejects.toThrow(
    /self[- ]signed|unable to verify|certificate/i,
  );
  await Promise.all([checked.close(), stranger.close()]);
});

it('the controller pushes over verified TLS: the route is Programmed and served', async () => {
  await ok(
    ['apply', '-n', NS, '-f', '-'],
    `apiVersion: sluice.dev/v1alpha1
kind: GatewayRoute
metadata: { name: secure-admin }
spec:
  service: { name: secure-admin, url: "${up.url}" }
  routes: [{ name: main, paths: ["/secure-admin"] }]
`,
  );
  const c = await until('Programmed=True', programmed, (c) => c?.status === 'True', 30_000);
  expect(c.message).toBe('Running on 1 of 1 pods.');
  expect((await fetch(plane.url('http', '/secure-admin/x'))).status).toBe(200);
});

it('an impostor with a certificate for the same name from another CA gets no request: no token, no snapshot', async () => {
  await ok(['apply', '-n', NS, '-f', '-'], slice('impostor-0', (impostor.address() as AddressInfo).port));
  const pods = async () => {
    const text = await (await fetch(controller.url('metrics', '/metrics'))).text();
    return {
      found: metricValue(text, 'sluice_controller_dataplane_pods', { state: 'found' }),
      inSync: metricValue(text, 'sluice_controller_dataplane_pods', { state: 'in_sync' }),
      failing: metricValue(text, 'sluice_controller_dataplane_pods', { state: 'failing' }),
    };
  };
  // The controller finds both pods and keeps only the real one in sync...
  expect(
    await until('the impostor found, failing', pods, (p) => p.found === 2 && p.failing === 1, 30_000),
  ).toEqual({
    found: 2,
    inSync: 1,
    failing: 1,
  });
  // ...while it tries the impostor again (a new route to push), over TLS that fails at the handshake.
  await ok(
    ['apply', '-n', NS, '-f', '-'],
    `apiVersion: sluice.dev/v1alpha1
kind: GatewayRoute
metadata: { name: secure-admin-2 }
spec:
  service: { name: secure-admin-2, url: "${up.url}" }
  routes: [{ name: main, paths: ["/secure-admin-2"] }]
`,
  );
  await until(
    'the new route on the real pod',
    () => fetch(plane.url('http', '/secure-admin-2/x')).then((r) => r.status),
    (s) => s === 200,
  );
  expect(await pods()).toEqual({ found: 2, inSync: 1, failing: 1 });
  expect(impostorSeen).toEqual([]);
});
