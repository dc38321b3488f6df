/**
 * GatewayClasses on a real API server (KUBECONFIG) with the upstream CRDs: a class's
 * parametersRef ConfigMap sets its Gateways' Service type and labels, and a change to the
 * ConfigMap changes the Services; a parametersRef that does not resolve is Accepted False
 * InvalidParameters until it does. And two installations in one namespace (two controllers of
 * this process, each with its own data plane: 127.0.8.1 and 127.0.8.2, its own Lease, port range
 * and controllerName) each program only the Gateways of their own classes, keep their own
 * Services, and write only their own status: the shared HTTPRoute gets one parent entry from
 * each, which neither rewrites. Moving a Gateway to the other class moves it to the other
 * installation. The controllerNames are unique to the run: a GatewayClass is cluster-wide.
 */
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Controller } from '../../controller/main.ts';
import type { DataPlane } from '../../dataplane/main.ts';
import {
  crdsAndNamespace,
  dataplaneAdminObjects,
  serviceWithPods,
  startControllerIn,
} from '../helpers/controller-on-kapi.ts';
import { installGatewayApiCrds } from '../helpers/gateway-api/crds.ts';
import { kubectlOnce, ok } from '../helpers/kubectl.ts';
import { metricValue } from '../helpers/processes.ts';
import { freePort, startTestDataPlane } from '../helpers/servers.ts';
import { until } from '../helpers/until.ts';

const ID = randomBytes(3).toString('hex');
const NS = `sluice-classes-${ID}`;
const TOKEN = 'gw-classes-token';
const A = {
  name: 'a',
  controllerName: `sluice.dev/gateway-controller-a-${ID}`,
  host: '127.0.8.1',
  ports: { first: 24_100, last: 24_149 },
};
const B = {
  name: 'b',
  controllerName: `sluice.dev/gateway-controller-team-b-${ID}`,
  host: '127.0.8.2',
  ports: { first: 24_150, last: 24_199 },
};
const CLASS_A = `class-a-${ID}`;
const CLASS_B = `class-b-${ID}`;
const CLASS_BAD = `class-bad-${ID}`;

interface Cond {
  type: string;
  status: string;
  reason: string;
  message: string;
}
interface Obj {
  metadata: {
    resourceVersion: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
  spec: {
    type?: string;
    externalTrafficPolicy?: string;
    healthCheckNodePort?: number;
    ports?: { port: number; targetPort: number }[];
  };
  status?: {
    conditions?: Cond[];
    parents?: { parentRef: { name: string }; controllerName: string; conditions: Cond[] }[];
  };
}

const planes: DataPlane[] = [];
const controllers: Controller[] = [];

const get = async (kind: string, name: string, ns: string | null = NS): Promise<Obj | null> => {
  const r = await kubectlOnce(['get', kind, name, ...(ns ? ['-n', ns] : []), '-o', 'json']);
  if (r.code !== 0 && /NotFound/.test(r.stderr)) return null;
  if (r.code !== 0) throw new Error(r.stderr);
  return JSON.parse(r.stdout) as Obj;
};
const accepted = async (cls: string) =>
  (await get('gatewayclass', cls, null))?.status?.conditions?.find((c) => c.type === 'Accepted');
const programmed = async (gw: string) =>
  (await get('gateway', gw))?.status?.conditions?.find((c) => c.type === 'Programmed');
const service = (gw: string) => get('service', `sluice-gateway-${gw}`);
const apply = (yaml: string) => ok(['apply', '-n', NS, '-f', '-'], yaml);
const inRange = (port: number | undefined, r: { first: number; last: number }) =>
  port !== undefined && port >= r.first && port <= r.last;
const listenerIds = (c: Controller) => (c.runner.snapshot()?.table.listeners ?? []).map((l) => l.id);
const statusWrites = async (c: Controller) =>
  metricValue(await (await fetch(`${c.metricsUrl}/metrics`)).text(), 'sluice_controller_status_writes_total');

const classYaml = (name: string, controllerName: string, params?: string) => `
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: { name: ${name} }
spec:
  controllerName: ${controllerName}
${params ? `  parametersRef: { group: "", kind: ConfigMap, name: ${params}, namespace: ${NS} }` : ''}
`;
const gatewayYaml = (name: string, cls: string) => `
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: ${name} }
spec:
  gatewayClassName: ${cls}
  listeners: [{ name: http, protocol: HTTP, port: 80 }]
`;
const paramsYaml = (data: string) => `
apiVersion: v1
kind: ConfigMap
metadata: { name: params-a }
data:
${data}
`;

async function installation(i: typeof A): Promise<Controller> {
  const adminPort = await freePort();
  planes.push(await startTestDataPlane({ host: i.host, adminHost: i.host, adminPort, adminToken: TOKEN }));
  await apply(dataplaneAdminObjects(adminPort, [i.host]).replaceAll('sluice-admin', `admin-${i.name}`));
  const c = await startControllerIn(NS, TOKEN, `lease-${i.name}`, {
    dataplaneService: `${NS}/admin-${i.name}`,
    gatewayApi: true,
    gatewayControllerName: i.controllerName,
    gatewayPorts: i.ports,
    gatewayServiceType: 'ClusterIP',
    gatewayServiceSelector: { app: `dataplane-${i.name}` },
    resyncMs: 500,
  });
  controllers.push(c);
  return c;
}

let ca: Controller;
let cb: Controller;

beforeAll(async () => {
  await installGatewayApiCrds();
  await crdsAndNamespace(NS);
  await apply(paramsYaml('  serviceType: NodePort\n  serviceLabels: "team: a"'));
  await ok(
    ['apply', '-f', '-'],
    [
      classYaml(CLASS_A, A.controllerName, 'params-a'),
      classYaml(CLASS_B, B.controllerName),
      classYaml(CLASS_BAD, A.controllerName, 'params-later'),
    ].join('---'),
  );
  await apply(`${gatewayYaml('gw-a', CLASS_A)}---${gatewayYaml('gw-b', CLASS_B)}---
${serviceWithPods('web', [{ host: '127.0.0.1', port: 3000 }], 8080)}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: { name: web }
spec:
  parentRefs: [{ name: gw-a }, { name: gw-b }]
  rules: [{ backendRefs: [{ name: web, port: 8080 }] }]
`);
  ca = await installation(A);
  cb = await installation(B);
}, 120_000);

afterAll(async () => {
  await Promise.all(controllers.map((c) => c.close()));
  await Promise.all(planes.map((p) => p.close()));
  for (const cls of [CLASS_A, CLASS_B, CLASS_BAD])
    await ok(['delete', 'gatewayclass', cls, '--wait=false']).catch(() => {});
  await ok(['delete', 'namespace', NS, '--wait=false']).catch(() => {});
}, 60_000);

describe('GatewayClass parametersRef (a ConfigMap)', () => {
  it("the class is Accepted and its Gateway's Service takes the ConfigMap's type and labels", async () => {
    await until(async () => (await accepted(CLASS_A))?.status === 'True', 20_000, 100);
    await until(async () => (await service('gw-a'))?.spec.type === 'NodePort', 20_000, 100);
    const svc = (await service('gw-a'))!;
    expect(svc.metadata.labels).toEqual({ 'gateway.networking.k8s.io/gateway-name': 'gw-a', team: 'a' });
    expect(svc.metadata.annotations?.['sluice.dev/gateway-controller-name']).toBe(A.controllerName);
  });

  it("a change to the ConfigMap changes the Services: type ClusterIP, then LoadBalancer (Local, then Cluster), then (key removed) the controller's default", async () => {
    await apply(paramsYaml('  serviceType: ClusterIP\n  serviceLabels: "team: a2"'));
    await until(async () => (await service('gw-a'))?.spec.type === 'ClusterIP', 20_000, 100);
    expect((await service('gw-a'))!.metadata.labels?.team).toBe('a2');
    await apply(paramsYaml('  serviceType: LoadBalancer\n  externalTrafficPolicy: Local'));
    await until(async () => (await service('gw-a'))?.spec.type === 'LoadBalancer', 20_000, 100);
    expect((await service('gw-a'))!.metadata.labels?.team).toBeUndefined();
    expect((await service('gw-a'))!.spec.externalTrafficPolicy).toBe('Local');
    await apply(paramsYaml('  serviceType: LoadBalancer'));
    await until(async () => (await service('gw-a'))?.spec.externalTrafficPolicy === 'Cluster', 20_000, 100);
    expect((await service('gw-a'))!.spec.healthCheckNodePort).toBeUndefined();
    await apply(paramsYaml('  serviceType: LoadBalancer\n  externalTrafficPolicy: Local'));
    await until(async () => (await service('gw-a'))?.spec.externalTrafficPolicy === 'Local', 20_000, 100);
    await ok(['delete', 'configmap', 'params-a', '-n', NS]);
    await apply(paramsYaml('  serviceLabels: "team: a3"'));
    await until(async () => (await service('gw-a'))?.metadata.labels?.team === 'a3', 20_000, 100);
    expect((await service('gw-a'))!.spec.type).toBe('ClusterIP');
    expect((await accepted(CLASS_A))?.status).toBe('True');
  });

  it('a bad value makes the class Accepted False InvalidParameters naming the key, its Gateway unserved but its Service kept; fixed, it is accepted again', async () => {
    await until(async () => listenerIds(ca).length === 1, 20_000, 100);
    const kept = (await service('gw-a'))!.metadata.resourceVersion;
    await apply(paramsYaml('  serviceType: Ingress'));
    await until(async () => (await accepted(CLASS_A))?.status === 'False', 20_000, 100);
    expect(await accepted(CLASS_A)).toMatchObject({
      reason: 'InvalidParameters',
      message: `ConfigMap ${NS}/params-a key serviceType: "Ingress" is not ClusterIP, LoadBalancer, NodePort`,
    });
    await until(async () => listenerIds(ca).length === 0, 20_000, 100);
    await sleep(1_000);
    expect((await service('gw-a'))?.metadata.resourceVersion).toBe(kept);
    await apply(paramsYaml('  serviceType: NodePort'));
    await until(async () => (await accepted(CLASS_A))?.status === 'True', 20_000, 100);
    await until(async () => (await service('gw-a'))?.spec.type === 'NodePort', 20_000, 100);
  });

  it('a parametersRef to a ConfigMap that does not exist is InvalidParameters naming it, until it is created', async () => {
    await until(async () => (await accepted(CLASS_BAD))?.reason === 'InvalidParameters', 20_000, 100);
    expect((await accepted(CLASS_BAD))?.message).toBe(
      `spec.parametersRef: ConfigMap ${NS}/params-later not found (it must be in a namespace the controller watches)`,
    );
    await apply(`
apiVersion: v1
kind: ConfigMap
metadata: { name: params-later }
data: { serviceType: NodePort }
`);
    await until(async () => (await accepted(CLASS_BAD))?.status === 'True', 20_000, 100);
  });
});

describe('two installations with different controllerNames', () => {
  it('each programs only the Gateways of its own classes, on its own pods and ports', async () => {
    await until(async () => (await programmed('gw-a'))?.status === 'True', 20_000, 100);
    await until(async () => (await programmed('gw-b'))?.status === 'True', 20_000, 100);
    expect(listenerIds(ca)).toEqual([`listener/${NS}/gw-a/http`]);
    expect(listenerIds(cb)).toEqual([`listener/${NS}/gw-b/http`]);
    expect(planes.map((p) => (p.holder.snapshot?.table.listeners ?? []).map((l) => l.id))).toEqual([
      [`listener/${NS}/gw-a/http`],
      [`listener/${NS}/gw-b/http`],
    ]);
    expect((await programmed('gw-a'))?.message).toBe('Running on 1 of 1 pods.');
    expect((await programmed('gw-b'))?.message).toBe('Running on 1 of 1 pods.');
    expect(inRange((await service('gw-a'))?.spec.ports?.[0]?.targetPort, A.ports)).toBe(true);
    expect(inRange((await service('gw-b'))?.spec.ports?.[0]?.targetPort, B.ports)).toBe(true);
    expect((await service('gw-b'))!.metadata.annotations?.['sluice.dev/gateway-controller-name']).toBe(
      B.controllerName,
    );
    // Each class's status is written by its own installation only: B's class lists no parameters.
    expect(await accepted(CLASS_B)).toMatchObject({ status: 'True', reason: 'Accepted' });
  });

  it('the shared HTTPRoute has one parent entry from each, and then nobody writes: no fight', async () => {
    const parentsOf = async () =>
      ((await get('httproute', 'web'))?.status?.parents ?? [])
        .map((p) => [p.parentRef.name, p.controllerName] as const)
        .sort();
    await until(async () => (await parentsOf()).length === 2, 20_000, 100);
    expect(await parentsOf()).toEqual([
      ['gw-a', A.controllerName],
      ['gw-b', B.controllerName],
    ]);
    const versions = () =>
      Promise.all(
        [
          get('httproute', 'web'),
          get('gateway', 'gw-a'),
          get('gateway', 'gw-b'),
          service('gw-a'),
          service('gw-b'),
          get('gatewayclass', CLASS_A, null),
          get('gatewayclass', CLASS_B, null),
        ].map((p) => p.then((o) => o?.metadata.resourceVersion)),
      );
    const writes = await Promise.all(controllers.map(statusWrites));
    const before = await versions();
    // resyncMs 500: each leader judges every status anew about six times in 3 s.
    await sleep(3_000);
    expect(await versions()).toEqual(before);
    expect(await Promise.all(controllers.map(statusWrites))).toEqual(writes);
  });

  it("a Gateway moved to the other installation's class is served by that one alone, its Service taken over", async () => {
    await apply(gatewayYaml('gw-b', CLASS_A));
    await until(async () => listenerIds(ca).length === 2 && listenerIds(cb).length === 0, 20_000, 100);
    await until(
      async () => inRange((await service('gw-b'))?.spec.ports?.[0]?.targetPort, A.ports),
      20_000,
      100,
    );
    const svc = (await service('gw-b'))!;
    expect(svc.metadata.annotations?.['sluice.dev/gateway-controller-name']).toBe(A.controllerName);
    // A's class parameters apply to it now.
    expect(svc.spec.type).toBe('NodePort');
    await until(
      async () =>
        ((await get('httproute', 'web'))?.status?.parents ?? []).every(
          (p) => p.controllerName === A.controllerName,
        ),
      20_000,
      100,
    );
    // And it stays A's: B, whose Gateway it no longer is, leaves A's Service alone.
    const rv = (await service('gw-b'))?.metadata.resourceVersion;
    await sleep(2_000);
    expect((await service('gw-b'))?.metadata.resourceVersion).toBe(rv);
  });
});
