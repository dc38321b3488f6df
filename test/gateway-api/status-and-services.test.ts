/**
 * What the controller writes for the Gateway API, on a real API server (KUBECONFIG) with the
 * upstream CRDs, a controller of this process and two data planes (127.0.0.1 and 127.0.0.2, as two
 * pods): the GatewayClass's Accepted, the Gateway's Accepted, Programmed (every pod runs it),
 * listeners and addresses, the HTTPRoute's parent entry beside another controller's (kept), and
 * each Gateway's Service (its port allocation, owner, label), deleted with its Gateway; an idle
 * controller writes nothing; a restart keeps the ports the Services hold. Status and Services
 * only: serving the listener ports is the data plane's part, tested with it.
 */
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SUPPORTED_FEATURES } from '../../controller/gateway-api/features.ts';
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
const NS = `sluice-gwapi-${ID}`;
const CLASS = `sluice-writer-${ID}`;
const TOKEN = 'gwapi-writer-token';
const HOSTS = ['127.0.0.1', '127.0.0.2'];
const PORTS = { first: 23_400, last: 23_499 };
const SELECTOR = { 'app.kubernetes.io/component': 'dataplane', 'app.kubernetes.io/instance': ID };
const OTHER = 'example.com/other-controller';

interface Cond {
  type: string;
  status: string;
  reason: string;
  message: string;
  observedGeneration: number;
  lastTransitionTime: string;
}
interface Obj {
  metadata: {
    uid: string;
    resourceVersion: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    ownerReferences?: Record<string, unknown>[];
  };
  spec: { type?: string; selector?: Record<string, string>; ports?: Record<string, unknown>[] };
  status?: {
    conditions?: Cond[];
    addresses?: { type: string; value: string }[];
    supportedFeatures?: { name: string }[];
    listeners?: {
      name: string;
      attachedRoutes: number;
      supportedKinds: { group: string; kind: string }[];
      conditions: Cond[];
    }[];
    parents?: { parentRef: { name: string }; controllerName: string; conditions: Cond[] }[];
  };
}

let planes: DataPlane[] = [];
let controller: Controller;

const get = async (kind: string, name: string): Promise<Obj | null> => {
  const r = await kubectlOnce(['get', kind, name, '-n', NS, '-o', 'json']);
  if (r.code !== 0 && /NotFound/.test(r.stderr)) return null;
  if (r.code !== 0) throw new Error(r.stderr);
  return JSON.parse(r.stdout) as Obj;
};
const condition = (conds: Cond[] | undefined, type: string) => conds?.find((c) => c.type === type);
const apply = (yaml: string) => ok(['apply', '-n', NS, '-f', '-'], yaml);
const gatewayYaml = (name: string, port = 80) => `
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: ${name} }
spec:
  gatewayClassName: ${CLASS}
  infrastructure: { labels: { team: shop }, annotations: { example.com/lb: internal } }
  listeners: [{ name: http, protocol: HTTP, port: ${port} }]
`;
const programmedGateway = async (name: string) =>
  condition((await get('gateway', name))?.status?.conditions, 'Programmed')?.status === 'True';
const serviceOf = (gateway: string) => get('service', `sluice-gateway-${gateway}`);
const targetPort = async (gateway: string) => (await serviceOf(gateway))?.spec.ports?.[0]?.targetPort;

async function startController(): Promise<Controller> {
  return startControllerIn(NS, TOKEN, `sluice-gwapi-${ID}`, {
    gatewayApi: true,
    gatewayPorts: PORTS,
    gatewayServiceType: 'ClusterIP',
    gatewayServiceSelector: SELECTOR,
    resyncMs: 500,
  });
}

/** Status and Service writes the controller counted (ok or not): sluice_controller_*_writes_total. */
async function writes(c: Controller): Promise<{ status: number; services: number }> {
  const text = await (await fetch(`${c.metricsUrl}/metrics`)).text();
  return {
    status: metricValue(text, 'sluice_controller_status_writes_total'),
    services: metricValue(text, 'sluice_controller_gateway_service_writes_total'),
  };
}

const builds = async (c: Controller) =>
  metricValue(await (await fetch(`${c.metricsUrl}/metrics`)).text(), 'sluice_controller_builds_total');

beforeAll(async () => {
  await installGatewayApiCrds();
  await crdsAndNamespace(NS);
  const adminPort = await freePort();
  planes = await Promise.all(
    HOSTS.map((host) => startTestDataPlane({ host, adminHost: host, adminPort, adminToken: TOKEN })),
  );
  await apply(dataplaneAdminObjects(adminPort, HOSTS));
  await ok(
    ['apply', '-f', '-'],
    `
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: { name: ${CLASS} }
spec: { controllerName: sluice.dev/gateway-controller }
`,
  );
  await apply(`${gatewayYaml('gw')}
---
${serviceWithPods('web', [{ host: '127.0.0.1', port: 3000 }], 8080)}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: { name: web }
spec:
  parentRefs: [{ name: gw }, { name: their-gw }]
  rules: [{ matches: [{ path: { type: PathPrefix, value: /shop } }], backendRefs: [{ name: web, port: 8080 }] }]
`);
  // Another controller's entry for its own parent, there before Sluice writes.
  await ok([
    'patch',
    'httproute',
    'web',
    '-n',
    NS,
    '--subresource=status',
    '--type=merge',
    '-p',
    JSON.stringify({
      status: {
        parents: [
          {
            parentRef: { name: 'their-gw' },
            controllerName: OTHER,
            conditions: [
              {
                type: 'Accepted',
                status: 'True',
                reason: 'Accepted',
                message: 'theirs',
                observedGeneration: 1,
                lastTransitionTime: '2025-01-01T00:00:00Z',
              },
            ],
          },
        ],
      },
    }),
  ]);
  controller = await startController();
}, 120_000);

afterAll(async () => {
  await controller?.close();
  await Promise.all(planes.map((p) => p.close()));
  await ok(['delete', 'gatewayclass', CLASS, '--wait=false']).catch(() => {});
  await ok(['delete', 'namespace', NS, '--wait=false']).catch(() => {});
}, 60_000);

describe('status of a GatewayClass, a Gateway and an HTTPRoute', () => {
  it('the GatewayClass is Accepted, in a SupportedVersion, and lists its supported features', async () => {
    await until(
      async () => {
        const gc = JSON.parse(await ok(['get', 'gatewayclass', CLASS, '-o', 'json'])) as Obj;
        return condition(gc.status?.conditions, 'Accepted')?.status === 'True';
      },
      20_000,
      100,
    );
    const gc = JSON.parse(await ok(['get', 'gatewayclass', CLASS, '-o', 'json'])) as Obj;
    expect(condition(gc.status?.conditions, 'Accepted')).toMatchObject({
      reason: 'Accepted',
      observedGeneration: 1,
    });
    expect(condition(gc.status?.conditions, 'SupportedVersion')).toMatchObject({ status: 'True' });
    // As the API server keeps them (a list map keyed by name), in the order written: sorted.
    const features = (gc.status?.supportedFeatures ?? []).map((f) => f.name);
    expect(features).toEqual([...SUPPORTED_FEATURES]);
    expect(features).toContain('HTTPRouteQueryParamMatching');
  });

  it('the Gateway is Accepted and Programmed on both pods, its listener with its conditions, 1 attached route and an address', async () => {
    await until(() => programmedGateway('gw'), 20_000, 100);
    const gw = (await get('gateway', 'gw'))!;
    expect(condition(gw.status?.conditions, 'Accepted')).toMatchObject({
      status: 'True',
      reason: 'Accepted',
    });
    expect(condition(gw.status?.conditions, 'Programmed')).toMatchObject({
      reason: 'Programmed',
      message: 'Running on 2 of 2 pods.',
      observedGeneration: 1,
    });
    // Every pod runs the snapshot with the Gateway's listener on its allocated port.
    const hash = controller.runner.lastBuild?.hash;
    expect(planes.map((p) => p.holder.hash)).toEqual([hash, hash]);
    const [listener] = gw.status!.listeners!;
    expect(listener).toMatchObject({
      name: 'http',
      attachedRoutes: 1,
      supportedKinds: [
        { group: 'gateway.networking.k8s.io', kind: 'HTTPRoute' },
        { group: 'gateway.networking.k8s.io', kind: 'GRPCRoute' },
      ],
    });
    expect(Object.fromEntries(listener.conditions.map((c) => [c.type, [c.status, c.reason]]))).toEqual({
      Accepted: ['True', 'Accepted'],
      ResolvedRefs: ['True', 'ResolvedRefs'],
      Conflicted: ['False', 'NoConflicts'],
      Programmed: ['True', 'Programmed'],
    });
    // No cluster IP on this API server (kapi allocates none): the Service's cluster DNS name.
    await until(async () => ((await get('gateway', 'gw'))?.status?.addresses?.length ?? 0) > 0, 10_000, 100);
    expect((await get('gateway', 'gw'))!.status!.addresses).toEqual([
      { type: 'Hostname', value: `sluice-gateway-gw.${NS}.svc.cluster.local` },
    ]);
  });

  it("the Gateway's Service: the listener port to its allocated data-plane port, the pods' selector, owned by the Gateway, with its label and spec.infrastructure's", async () => {
    const svc = (await serviceOf('gw'))!;
    const gw = (await get('gateway', 'gw'))!;
    const listeners = controller.runner.snapshot()!.table.listeners ?? [];
    expect(listeners.map((l) => [l.id, l.port])).toEqual([[`listener/${NS}/gw/http`, PORTS.first]]);
    expect(svc.spec).toMatchObject({
      type: 'ClusterIP',
      selector: SELECTOR,
      ports: [{ name: 'listener-80', port: 80, targetPort: PORTS.first, protocol: 'TCP' }],
    });
    expect(svc.metadata.labels).toEqual({ 'gateway.networking.k8s.io/gateway-name': 'gw', team: 'shop' });
    expect(svc.metadata.annotations).toMatchObject({ 'example.com/lb': 'internal' });
    expect(svc.metadata.ownerReferences).toEqual([
      {
        apiVersion: 'gateway.networking.k8s.io/v1',
        kind: 'Gateway',
        name: 'gw',
        uid: gw.metadata.uid,
        controller: true,
        blockOwnerDeletion: true,
      },
    ]);
  });

  it("the HTTPRoute's parent entry is Sluice's, beside the other controller's, which stays as it was", async () => {
    await until(
      async () =>
        ((await get('httproute', 'web'))?.status?.parents ?? []).some((p) => p.parentRef.name === 'gw'),
      20_000,
      100,
    );
    const parents = (await get('httproute', 'web'))!.status!.parents!;
    expect(parents.map((p) => [p.parentRef.name, p.controllerName])).toEqual([
      ['their-gw', OTHER],
      ['gw', 'sluice.dev/gateway-controller'],
    ]);
    expect(parents[0].conditions).toEqual([
      expect.objectContaining({ message: 'theirs', lastTransitionTime: '2025-01-01T00:00:00Z' }),
    ]);
    expect(Object.fromEntries(parents[1].conditions.map((c) => [c.type, c.status]))).toEqual({
      Accepted: 'True',
      ResolvedRefs: 'True',
    });
  });

  it("the load balancer's address, once the Service reports one, becomes the Gateway's", async () => {
    const ingress = JSON.stringify({ status: { loadBalancer: { ingress: [{ ip: '203.0.113.7' }] } } });
    const args = ['patch', 'service', 'sluice-gateway-gw', '-n', NS, '--type=merge', '-p', ingress];
    // A cluster takes it on the status subresource; kapi stores a Service's status with the rest.
    const viaStatus = await kubectlOnce([...args, '--subresource=status']);
    if (viaStatus.code !== 0) await ok(args);
    await until(
      async () => (await get('gateway', 'gw'))?.status?.addresses?.[0]?.value === '203.0.113.7',
      10_000,
      100,
    );
    expect((await get('gateway', 'gw'))!.status!.addresses).toEqual([
      { type: 'IPAddress', value: '203.0.113.7' },
    ]);
  });

  it('an idle controller writes nothing: no status and no Service write while the pods are asked again and again, nor after a build that changes nothing', async () => {
    const before = await writes(controller);
    const versions = async () =>
      Promise.all([
        ok(['get', 'gatewayclass', CLASS, '-o', 'jsonpath={.metadata.resourceVersion}']),
        get('gateway', 'gw').then((o) => o?.metadata.resourceVersion),
        get('httproute', 'web').then((o) => o?.metadata.resourceVersion),
        serviceOf('gw').then((o) => o?.metadata.resourceVersion),
      ]);
    const rv = await versions();
    // resyncMs 500: the leader asks both pods about six times in 3 s, each time judging status anew.
    await sleep(3_000);
    expect(await writes(controller)).toEqual(before);
    // A change to a Service a route uses builds again (the same snapshot): every status is judged anew.
    const built = await builds(controller);
    await ok(['annotate', 'service', 'web', '-n', NS, `touched=${Date.now()}`]);
    await until(async () => (await builds(controller)) > built, 10_000, 50);
    await sleep(1_000);
    expect(await writes(controller)).toEqual(before);
    expect(await versions()).toEqual(rv);
    // And none of the writes so far failed (no 409 from a stale resourceVersion, no 422).
    const text = await (await fetch(`${controller.metricsUrl}/metrics`)).text();
    expect(metricValue(text, 'sluice_controller_status_writes_total', { result: 'error' })).toBe(0);
    expect(metricValue(text, 'sluice_controller_gateway_service_writes_total', { result: 'error' })).toBe(0);
  });
});

describe("each Gateway's own Service", () => {
  it('a second Gateway gets a data-plane port of its own, for the same listener port', async () => {
    await apply(gatewayYaml('gw2'));
    await until(
      async () => (await programmedGateway('gw2')) && (await targetPort('gw2')) !== undefined,
      20_000,
      100,
    );
    expect(await targetPort('gw2')).toBe(PORTS.first + 1);
    expect(await targetPort('gw')).toBe(PORTS.first);
    const ports = (controller.runner.snapshot()!.table.listeners ?? []).map((l) => [l.id, l.port]);
    expect(ports).toEqual([
      [`listener/${NS}/gw/http`, PORTS.first],
      [`listener/${NS}/gw2/http`, PORTS.first + 1],
    ]);
  });

  it('a Service edited or deleted by hand is put back: the same port and owner', async () => {
    const patch = '[{"op":"replace","path":"/spec/ports/0/targetPort","value":1234}]';
    await ok(['patch', 'service', 'sluice-gateway-gw2', '-n', NS, '--type', 'json', '-p', patch]);
    await until(async () => (await targetPort('gw2')) === PORTS.first + 1, 10_000, 50);
    await ok(['delete', 'service', 'sluice-gateway-gw2', '-n', NS]);
    await until(async () => (await targetPort('gw2')) === PORTS.first + 1, 10_000, 50);
    expect((await serviceOf('gw2'))!.metadata.ownerReferences).toMatchObject([
      { kind: 'Gateway', name: 'gw2', controller: true },
    ]);
    const text = await (await fetch(`${controller.metricsUrl}/metrics`)).text();
    for (const verb of ['update', 'create'])
      expect(
        metricValue(text, 'sluice_controller_gateway_service_writes_total', { verb, result: 'ok' }),
      ).toBeGreaterThanOrEqual(1);
    expect(metricValue(text, 'sluice_controller_gateway_service_writes_total', { result: 'error' })).toBe(0);
  });

  it('a restarted controller keeps the ports the Services hold, and deletes the Service of a Gateway deleted meanwhile', async () => {
    await controller.close();
    // While no controller runs, the first Gateway goes: its port is free now, but the second
    // Gateway's Service holds the one it has, so it keeps it (lowest free would be PORTS.first).
    await ok(['delete', 'gateway', 'gw', '-n', NS]);
    expect(await serviceOf('gw')).not.toBeNull(); // no garbage collector on this API server
    controller = await startController();
    await until(async () => (await serviceOf('gw')) === null, 20_000, 100);
    await until(() => (controller.runner.snapshot()?.table.listeners ?? []).length > 0, 20_000, 100);
    expect(await targetPort('gw2')).toBe(PORTS.first + 1);
    expect((controller.runner.snapshot()!.table.listeners ?? []).map((l) => [l.id, l.port])).toEqual([
      [`listener/${NS}/gw2/http`, PORTS.first + 1],
    ]);
    // Nothing else written on the Service: one write in all, the delete.
    const text = await (await fetch(`${controller.metricsUrl}/metrics`)).text();
    expect(metricValue(text, 'sluice_controller_gateway_service_writes_total')).toBe(1);
    expect(
      metricValue(text, 'sluice_controller_gateway_service_writes_total', { verb: 'delete', result: 'ok' }),
    ).toBe(1);
    // The HTTPRoute's parent is gone: Sluice's entry goes, the other controller's stays.
    await until(
      async () =>
        ((await get('httproute', 'web'))?.status?.parents ?? []).every((p) => p.controllerName === OTHER),
      20_000,
      100,
    );
    expect((await get('httproute', 'web'))!.status!.parents!.map((p) => p.parentRef.name)).toEqual([
      'their-gw',
    ]);
  });

  it('deleting a Gateway deletes its Service', async () => {
    expect(await serviceOf('gw2')).not.toBeNull();
    await ok(['delete', 'gateway', 'gw2', '-n', NS]);
    await until(async () => (await serviceOf('gw2')) === null, 20_000, 100);
    expect(controller.runner.snapshot()!.table.listeners ?? []).toEqual([]);
  });
});
