/**
 * Two installations in one cluster do not fight: the default one serves the GatewayRoutes and
 * GatewayPlugins without a `sluice.dev/class` label, the one with class "b" those labelled
 * `sluice.dev/class: b`; each pushes only its own objects to its own pods and writes only their
 * status. Relabelling a route moves it from one to the other. A real API server
 * (KUBECONFIG), a runner and a data plane (in this process) per installation.
 */
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import pino from 'pino';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ControllerMetrics } from '../../controller/metrics.ts';
import { Runner } from '../../controller/runner.ts';
import { Kube, loadKubeConfig } from '../../controller/source/kube.ts';
import type { DataPlane } from '../../dataplane/main.ts';
import { deleteAll, ok } from '../helpers/kubectl.ts';
import { startTestDataPlane } from '../helpers/servers.ts';

const NS = `sluice-two-${randomBytes(3).toString('hex')}`;
const TOKEN = 'test-admin-token';
const apply = (yaml: string) => ok(['apply', '-n', NS, '-f', '-'], yaml);
const runners: Runner[] = [];
const planes: DataPlane[] = [];

const route = (name: string, klass: string | null) => `
apiVersion: sluice.dev/v1alpha1
kind: GatewayRoute
metadata: { name: ${name}${klass ? `, labels: { sluice.dev/class: ${klass} }` : ''} }
spec:
  service: { name: ${name}, url: "http://127.0.0.1:9" }
  routes: [{ name: main, paths: ["/${name}"] }]
`;

async function installation(className: string | null, service: string): Promise<Runner> {
  const plane = await startTestDataPlane({ adminToken: TOKEN });
  planes.push(plane);
  await apply(`apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: { name: ${service}-x, labels: { kubernetes.io/service-name: ${service} } }
addressType: IPv4
ports: [{ name: admin, port: ${new URL(plane.adminUrl).port} }]
endpoints: [{ addresses: ["127.0.0.1"], targetRef: { kind: Pod, name: ${service}-pod } }]
`);
  const r = new Runner({
    kube: new Kube(loadKubeConfig()),
    log: pino({ level: 'silent' }),
    metrics: new ControllerMetrics(),
    dataplane: { namespace: NS, service },
    adminToken: TOKEN,
    holdoffMs: 10,
    watchNamespaces: [NS],
    className,
  });
  runners.push(r);
  await r.start();
  r.setLeading(true);
  return r;
}

const served = (r: Runner) => (r.snapshot()?.table.routes ?? []).map((x) => x.source.name).sort();
async function until(what: string, ok: () => boolean): Promise<void> {
  const end = Date.now() + 15_000;
  while (!ok()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}
const programmedMessage = async (name: string) =>
  (
    JSON.parse(await ok(['get', 'gwr', name, '-n', NS, '-o', 'json'])) as {
      status?: { conditions?: { type: string; message: string }[] };
    }
  ).status?.conditions?.find((c) => c.type === 'Programmed')?.message;

beforeAll(async () => {
  await ok(['apply', '--server-side', '--force-conflicts', '-f', 'crds']);
  await ok(['wait', '--for=condition=Established', '--timeout=30s', 'crd/gatewayroutes.sluice.dev']);
  await ok(['create', 'namespace', NS]);
}, 60_000);
afterAll(async () => {
  for (const r of runners) r.stop();
  await Promise.all(planes.map((p) => p.close()));
  await deleteAll('gatewayroutes', NS).catch(() => {});
}, 30_000);

it('each installation serves and writes only its own class; a relabelled route moves', async () => {
  await apply(`${route('plain', null)}---${route('for-b', 'b')}`);
  const a = await installation(null, 'admin-a');
  const b = await installation('b', 'admin-b');
  await until('both built', () => served(a).length === 1 && served(b).length === 1);
  expect(served(a)).toEqual(['plain']);
  expect(served(b)).toEqual(['for-b']);
  await until('pods on their snapshots', () =>
    planes.every((p, i) => p.holder.hash === runners[i].lastBuild?.hash),
  );
  // Each status is written by one installation only: its one pod.
  const end = Date.now() + 15_000;
  while ((await programmedMessage('plain')) !== 'Running on 1 of 1 pods.' && Date.now() < end)
    await sleep(100);
  expect(await programmedMessage('plain')).toBe('Running on 1 of 1 pods.');
  expect(await programmedMessage('for-b')).toBe('Running on 1 of 1 pods.');

  await ok(['label', 'gwr', 'plain', '-n', NS, 'sluice.dev/class=b']);
  await until('moved to b', () => served(b).length === 2 && served(a).length === 0);
  expect(served(b)).toEqual(['for-b', 'plain']);
});
