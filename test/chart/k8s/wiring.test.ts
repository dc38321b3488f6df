/**
 * The chart's wiring, not just its syntax: render it, apply it to the API server, then run
 * every replica of the rendered controller and data-plane Deployments as local processes
 * exactly as their pods would run (local-pod.ts: same args, env and mounted files), with
 * the EndpointSlices of the headless admin Service written by the test (kapi has no
 * EndpointSlice controller), pointing at the two data planes' admin ports. A GatewayRoute
 * applied with kubectl is then served by both, its status says Programmed on 2 of 2 pods,
 * and both data planes use the Redis whose URL the chart takes from a Secret. HTTPS is on, with
 * the default certificate from a Secret the chart mounts: a route's own certificate (spec.tls)
 * is served by SNI on both data planes, over h2 too, and an unknown name gets the default.
 *
 * Not covered here (no kubelet): probes timing, preStop, the ServiceAccount token (the
 * controller uses the test's KUBECONFIG), NetworkPolicy.
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { deleteAll, ok } from '../../helpers/kubectl.ts';
import { metricValue, stopAllSluice } from '../../helpers/processes.ts';
import { type PrivateRedis, startPrivateRedis } from '../../helpers/redis.ts';
import { startUpstream, type Upstream } from '../../helpers/servers.ts';
import { makePki, type Pki } from '../../tls/pki.ts';
import { curl, handshake } from '../../tls/tls-helpers.ts';
import { CHART, find, type Manifest, render, renderText } from '../helm.ts';
import { type LocalPod, startLocalPod } from './local-pod.ts';

const NS = `sluice-chart-wire-${randomBytes(3).toString('hex')}`;
const VALUES = {
  dataplane: { replicas: 2, preStopSeconds: 0, drainSeconds: 1 },
  controller: { replicas: 2, leaseSeconds: 3 },
  proxy: {
    service: { type: 'ClusterIP' },
    https: { enabled: true, defaultCertificateSecret: 'wired-default-tls' },
  },
  redis: { existingSecret: 'wired-redis', existingSecretKey: 'url' },
};

let manifests: Manifest[];
let pki: Pki;
let redis: PrivateRedis;
let up: Upstream;
const planes: LocalPod[] = [];
const controllers: LocalPod[] = [];

async function until<T>(
  what: string,
  probe: () => Promise<T>,
  good: (v: T) => boolean,
  ms = 20_000,
): Promise<T> {
  const end = Date.now() + ms;
  let last = await probe();
  while (!good(last)) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}; last: ${JSON.stringify(last)}`);
    await sleep(100);
    last = await probe();
  }
  return last;
}

beforeAll(async () => {
  [redis, up] = await Promise.all([startPrivateRedis(), startUpstream()]);
  await ok(['apply', '--server-side', '--force-conflicts', '-f', join(CHART, 'crds')]);
  await ok(['wait', '--for=condition=Established', '--timeout=30s', 'crd/gatewayroutes.sluice.dev']);
  await ok(['create', 'namespace', NS]);
  await ok(['create', 'secret', 'generic', 'wired-redis', '-n', NS, `--from-literal=url=${redis.url}`]);
  pki = makePki();
  for (const [secret, host] of [
    ['wired-default-tls', 'default.example.test'],
    ['wired-tls', 'wired.example.test'],
  ]) {
    const leaf = pki.leaf(host, [host]);
    await ok([
      'create',
      'secret',
      'tls',
      secret,
      '-n',
      NS,
      `--cert=${leaf.certFile}`,
      `--key=${leaf.keyFile}`,
    ]);
  }
  const opts = { namespace: NS, values: VALUES };
  manifests = await render(opts);
  await ok(['apply', '-n', NS, '-f', '-'], await renderText(opts));

  const dataplane = find(manifests, 'Deployment', 'gw-sluice-dataplane');
  for (let i = 0; i < dataplane.spec.replicas; i++)
    planes.push(await startLocalPod(dataplane, NS, i, 'livenessProbe'));
  // What Kubernetes would write for the headless admin Service: one slice per pod here, as
  // each local pod has its own port (real pods share the port and differ by IP).
  const admin = find(manifests, 'Service', 'gw-sluice-admin');
  const portName = admin.spec.ports[0].name;
  await ok(
    ['apply', '-n', NS, '-f', '-'],
    planes
      .map(
        (p) => `
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: { name: ${p.name}, labels: { kubernetes.io/service-name: ${admin.metadata.name} } }
addressType: IPv4
ports: [{ name: ${portName}, port: ${p.ports[admin.spec.ports[0].targetPort]} }]
endpoints: [{ addresses: ["127.0.0.1"], conditions: { ready: false }, targetRef: { kind: Pod, name: ${p.name} } }]
`,
      )
      .join('---'),
  );
  const controller = find(manifests, 'Deployment', 'gw-sluice-controller');
  for (let i = 0; i < controller.spec.replicas; i++)
    controllers.push(await startLocalPod(controller, NS, i, 'readinessProbe'));
}, 120_000);

afterAll(async () => {
  await stopAllSluice();
  await Promise.all([redis?.stop(), up?.close()]);
  pki?.remove();
  await deleteAll('gatewayroutes', NS).catch(() => {});
}, 30_000);

it('the processes run with what the Deployments say: token file, state dir, Redis URL and NODE_OPTIONS from the chart', () => {
  const [plane] = planes;
  expect(plane.args[0]).toBe('dataplane');
  expect(plane.env.SLUICE_REDIS_URL).toBe(redis.url);
  expect(plane.env.NODE_OPTIONS).toBe('--max-old-space-size=384 --max-semi-space-size=16');
  expect(controllers[0].args.slice(0, 3)).toEqual([
    'controller',
    '--dataplane-service',
    `${NS}/gw-sluice-admin`,
  ]);
  // Node took the NODE_OPTIONS (it refuses to start on an option NODE_OPTIONS does not allow).
  for (const p of [...planes, ...controllers]) expect(p.process.process.exitCode).toBeNull();
});

it('a GatewayRoute applied with kubectl is served by both data planes and says Programmed on 2 of 2 pods', async () => {
  await ok(
    ['apply', '-n', NS, '-f', '-'],
    `
apiVersion: sluice.dev/v1alpha1
kind: GatewayRoute
metadata: { name: wired }
spec:
  service: { name: wired, url: "${up.url}" }
  routes: [{ name: main, paths: ["/wired"] }]
`,
  );
  const statuses = () =>
    Promise.all(
      planes.map((p) =>
        fetch(p.url('http', '/wired/x')).then(
          (r) => r.status,
          () => 0,
        ),
      ),
    );
  expect(await until('both data planes to serve /wired', statuses, (s) => s.every((x) => x === 200))).toEqual(
    [200, 200],
  );
  expect(up.seen.filter((s) => s.url === '/wired/x').length).toBeGreaterThanOrEqual(2);
  // Ready now that they have a snapshot: the readiness probe's URL answers 200.
  for (const p of planes) expect((await fetch(p.url('admin', '/readyz'))).status).toBe(200);

  const programmed = await until(
    'Programmed=True',
    async () => {
      const o = JSON.parse(await ok(['get', 'gatewayroute', 'wired', '-n', NS, '-o', 'json']));
      return (o.status?.conditions ?? []).find((c: { type: string }) => c.type === 'Programmed') ?? null;
    },
    (c) => c?.status === 'True',
  );
  expect(programmed.message).toBe('Running on 2 of 2 pods.');
});

it('one controller leads (the Lease the chart names), the other stands by warm', async () => {
  const leading = await until(
    'one leader',
    () =>
      Promise.all(
        controllers.map(async (c) =>
          metricValue(await (await fetch(c.url('metrics', '/metrics'))).text(), 'sluice_controller_leader'),
        ),
      ),
    (v) => v.reduce((a, b) => a + b, 0) === 1,
  );
  expect(leading.sort()).toEqual([0, 1]);
  const lease = JSON.parse(await ok(['get', 'lease', 'gw-sluice-controller', '-n', NS, '-o', 'json']));
  expect(lease.spec.holderIdentity).toBeTruthy();
});

it('both data planes hold a connection to the Redis whose URL came from the Secret', async () => {
  const r = new Redis(redis.url);
  try {
    const clients = await until(
      'two Redis clients',
      async () => ((await r.client('LIST')) as string).split('\n').filter((l) => l.includes('cmd=')).length,
      (n) => n >= 3,
    );
    expect(clients).toBeGreaterThanOrEqual(3); // the two data planes and this probe
  } finally {
    r.disconnect();
  }
});

it("HTTPS from the chart: the route's certificate by SNI on both data planes, h2 by ALPN, the mounted default otherwise", async () => {
  await ok(
    ['apply', '-n', NS, '-f', '-'],
    `
apiVersion: sluice.dev/v1alpha1
kind: GatewayRoute
metadata: { name: wired-tls }
spec:
  tls: [{ hosts: [wired.example.test], secretName: wired-tls }]
  service: { name: wired-tls, url: "${up.url}" }
  routes: [{ name: main, paths: ["/secure"], hosts: [wired.example.test] }]
`,
  );
  for (const p of planes) {
    const port = p.ports.https;
    expect(port).toBeGreaterThan(0);
    const served = await until(
      `${p.name} to serve wired.example.test over h2`,
      () => curl('--http2', 'wired.example.test', port, '/secure/x', pki.caFile).catch(() => null),
      (r) => r?.status === 200,
    );
    expect(served?.version).toBe('2');
    const route = await handshake(port, 'wired.example.test', pki.ca);
    expect(route.cert.subject.CN).toBe('wired.example.test');
    expect(route.authorized).toBe(true);
    const other = await handshake(port, 'unknown.example.test', pki.ca);
    expect(other.cert.subject.CN).toBe('default.example.test');
  }
});
