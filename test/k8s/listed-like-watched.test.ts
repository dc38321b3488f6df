/**
 * Objects a controller lists at start are as real as those it hears of by watch (regression:
 * the items of a list of built-in objects carry no `kind`, so every Secret and Service that
 * existed before a restart, a failover or a 410 relist was "not found"). A runner that starts
 * before the objects exist and one that starts after them build the same snapshot and the
 * same status; the second, taking over, changes nothing: no push, no status write, no Event.
 *
 * Real API server (KUBECONFIG), two data planes in this process, a runner per "controller".
 * kapi, unlike kube-apiserver, names the kind of every list item; the runners' client drops it
 * from the items of built-in lists (core and discovery.k8s.io) as kube-apiserver sends them
 * (custom resources' items keep theirs there too).
 */
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import pino from 'pino';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ControllerMetrics } from '../../controller/metrics.ts';
import { Runner } from '../../controller/runner.ts';
import { Kube, type KubeList, loadKubeConfig } from '../../controller/source/kube.ts';
import type { DataPlane } from '../../dataplane/main.ts';
import { deleteAll, ok } from '../helpers/kubectl.ts';
import { startTestDataPlane } from '../helpers/servers.ts';

const NS = `sluice-listed-${randomBytes(3).toString('hex')}`;
const TOKEN = 'test-admin-token';
const apply = (yaml: string) => ok(['apply', '-n', NS, '-f', '-'], yaml);
const planes: DataPlane[] = [];
const runners: Runner[] = [];

const OBJECTS = `
apiVersion: v1
kind: Secret
metadata: { name: api-keys }
stringData: { alice: alice-key-123 }
---
apiVersion: v1
kind: Service
metadata: { name: orders-svc }
spec: { ports: [{ name: http, port: 8080 }] }
---
apiVersion: sluice.dev/v1alpha1
kind: GatewayPlugin
metadata: { name: keys }
spec:
  plugin: key-auth
  keyAuth: { consumers: [{ name: alice, secretKeyRef: { name: api-keys, key: alice } }] }
---
apiVersion: sluice.dev/v1alpha1
kind: GatewayRoute
metadata: { name: orders }
spec:
  service: { name: orders, backendRef: { name: orders-svc, port: 8080 } }
  plugins: [{ name: keys }]
  routes: [{ name: main, paths: ["/orders"] }]
`;

/** Lists of built-in objects as kube-apiserver returns them: items without kind and apiVersion. */
class AsKubeApiserver extends Kube {
  override async list<T>(path: string): Promise<KubeList<T>> {
    const list = await super.list<T>(path);
    if (/^\/api\/|^\/apis\/discovery\.k8s\.io\//.test(path))
      for (const item of list.items as { kind?: string; apiVersion?: string }[]) {
        delete item.kind;
        delete item.apiVersion;
      }
    return list;
  }
}

function runner(metrics = new ControllerMetrics()): Runner {
  const r = new Runner({
    kube: new AsKubeApiserver(loadKubeConfig()),
    log: pino({ level: 'silent' }),
    metrics,
    dataplane: { namespace: NS, service: 'sluice-admin' },
    adminToken: TOKEN,
    holdoffMs: 10,
    watchNamespaces: [NS],
  });
  runners.push(r);
  return r;
}

async function until<T>(what: string, read: () => T | Promise<T>, done: (v: T) => boolean): Promise<T> {
  const end = Date.now() + 15_000;
  for (;;) {
    const v = await read();
    if (done(v)) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(v)}`);
    await sleep(50);
  }
}

const programmed = async (kind: string, name: string) =>
  (
    JSON.parse(await ok(['get', kind, name, '-n', NS, '-o', 'json'])) as {
      status?: { conditions?: { type: string; status: string; message: string }[] };
    }
  ).status?.conditions?.find((c) => c.type === 'Programmed');

beforeAll(async () => {
  await ok(['apply', '--server-side', '--force-conflicts', '-f', 'crds']);
  await ok(['wait', '--for=condition=Established', '--timeout=30s', 'crd/gatewayroutes.sluice.dev']);
  await ok(['create', 'namespace', NS]);
  for (let i = 0; i < 2; i++) planes.push(await startTestDataPlane({ adminToken: TOKEN }));
}, 60_000);

afterAll(async () => {
  for (const r of runners) r.stop();
  await Promise.all(planes.map((p) => p.close()));
  await deleteAll('gatewayroutes,gatewayplugins', NS).catch(() => {});
}, 30_000);

it('a runner that lists every referenced object builds what one that watched them arrive built, and takes over without a write', async () => {
  // 1. The watcher starts first, on an empty namespace, and leads.
  const watcher = runner();
  await watcher.start();
  watcher.setLeading(true);
  await apply(OBJECTS);
  await apply(
    planes
      .map((p, i) => {
        const port = new URL(p.adminUrl).port;
        return `apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: { name: sluice-admin-${i}, labels: { kubernetes.io/service-name: sluice-admin } }
addressType: IPv4
ports: [{ name: admin, port: ${port} }]
endpoints: [{ addresses: ["127.0.0.1"], conditions: { ready: true }, targetRef: { kind: Pod, name: dataplane-${i} } }]
`;
      })
      .join('---\n'),
  );
  const first = await until(
    'the route Programmed on both pods',
    () => programmed('gwr', 'orders'),
    (c) => c?.status === 'True',
  );
  expect(first?.message).toBe('Running on 2 of 2 pods.');
  const watched = watcher.lastBuild!;
  expect(
    Object.values(watched.status).flatMap((s) => s.conditions.filter((c) => c.status !== 'True')),
  ).toEqual([]);
  expect(planes.map((p) => p.holder.hash)).toEqual([watched.hash, watched.hash]);

  // 2. A second runner starts with everything already there: the same snapshot and status.
  const metrics = new ControllerMetrics();
  const lister = runner(metrics);
  await lister.start();
  await until(
    'a first build',
    () => lister.lastBuild,
    (b) => b !== null,
  );
  expect(lister.lastBuild!.hash).toBe(watched.hash);
  expect(lister.lastBuild!.status).toEqual(watched.status);
  expect(lister.lastBuild!.diagnostics).toEqual([]);

  // 3. The first one dies; the second takes over and finds nothing to change.
  watcher.stop();
  lister.setLeading(true);
  await until(
    'both pods asked',
    () => [...lister.publisher.pods.values()],
    (pods) => pods.length === 2 && pods.every((p) => p.hash !== null && !p.inFlight),
  );
  await sleep(500);
  const value = async (name: string, label: string) =>
    (await metrics.registry.getSingleMetric(name)?.get())?.values.find((v) =>
      Object.values(v.labels).includes(label),
    )?.value ?? 0;
  expect(await value('sluice_controller_pushes_total', 'applied')).toBe(0);
  expect(await value('sluice_controller_status_writes_total', 'ok')).toBe(0);
  expect(await value('sluice_controller_dataplane_pods', 'in_sync')).toBe(2);
  expect((await programmed('gwr', 'orders'))?.status).toBe('True');
}, 60_000);
