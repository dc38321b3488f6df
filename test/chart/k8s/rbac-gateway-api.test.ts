/**
 * Least privilege, enforced, for the Gateway API path (see rbac-enforced.test.ts for the
 * GatewayRoute path and how this works): the chart with gatewayAPI on, a private kapi with
 * KAPI_RBAC=1 and the upstream Gateway API CRDs, the controller under exactly the chart's Roles
 * and ClusterRole. It watches the CRDs, GatewayClasses, Gateways, HTTPRoutes, GRPCRoutes,
 * ReferenceGrants, Namespaces and ConfigMaps (the GatewayClass's parameters among them); writes GatewayClass and Gateway status (patch) and route
 * status (update); creates, updates and deletes a Gateway's Service. Then: nothing denied,
 * nothing allowed by anything but the chart, every grant used but the GatewayRoute path's.
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gatewayServiceName } from '../../../controller/gateway-api/gateways.ts';
import { standardCrdFiles } from '../../helpers/gateway-api/crds.ts';
import { stopAllSluice } from '../../helpers/processes.ts';
import { kapiMissing, type PrivateKapi, startPrivateKapi } from '../../helpers/private-kapi.ts';
import { CHART } from '../helm.ts';
import { ChartInstall, steadyGrantsUsed, UNUSABLE_ON_KAPI, until } from './chart-on-kapi.ts';

const RUN = kapiMissing === null || !!process.env.CI;
const id = randomBytes(3).toString('hex');
const APP = `gwapi-app-${id}`;
let kapi: PrivateKapi;
let inst: ChartInstall;

const objects = `
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: { name: sluice-${id} }
spec:
  controllerName: sluice.dev/gateway-controller
  parametersRef: { group: "", kind: ConfigMap, name: gateway-params, namespace: ${APP} }
---
apiVersion: v1
kind: ConfigMap
metadata: { name: gateway-params, namespace: ${APP} }
data: { serviceType: NodePort }
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: web, namespace: ${APP} }
spec:
  gatewayClassName: sluice-${id}
  listeners: [{ name: http, port: 80, protocol: HTTP }]
---
apiVersion: v1
kind: Service
metadata: { name: backend, namespace: ${APP} }
spec: { ports: [{ name: http, port: 8080 }] }
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: { name: web, namespace: ${APP} }
spec:
  parentRefs: [{ name: web }]
  rules: [{ backendRefs: [{ name: backend, port: 8080 }] }]
---
apiVersion: gateway.networking.k8s.io/v1
kind: GRPCRoute
metadata: { name: rpc, namespace: ${APP} }
spec:
  parentRefs: [{ name: web }]
  rules: [{ matches: [{ method: { service: echo.Echo } }], backendRefs: [{ name: backend, port: 8080 }] }]
---
apiVersion: gateway.networking.k8s.io/v1beta1
kind: ReferenceGrant
metadata: { name: none, namespace: ${APP} }
spec:
  from: [{ group: gateway.networking.k8s.io, kind: HTTPRoute, namespace: elsewhere }]
  to: [{ group: "", kind: Service }]
`;

type Gw = { status?: { conditions?: { type: string; status: string }[] } };
type Route = { status?: { parents?: { controllerName: string }[] } };
type Svc = { spec: { type: string; ports: { port: number; targetPort: number }[] } };

beforeAll(async () => {
  if (!RUN) return;
  kapi = await startPrivateKapi({ rbac: true });
  const crds = [...new Set(standardCrdFiles().map((f) => f.file))].map((f) => ['-f', f]);
  await kapi.kubectl(['apply', '--server-side', '-f', join(CHART, 'crds'), ...crds.flat()]);
  await kapi.kubectl(['wait', '--for=condition=Established', '--timeout=30s', 'crd', '--all']);
  inst = new ChartInstall(kapi, `sluice-gwapi-${id}`, {
    watchNamespaces: [APP],
    gatewayAPI: { enabled: true, serviceType: 'ClusterIP' },
    controller: { replicas: 1, leaseSeconds: 3 },
    dataplane: { replicas: 1, preStopSeconds: 0, drainSeconds: 1 },
  });
  await inst.install([APP]);
  await kapi.kubectl(['apply', '-f', '-'], objects);
  await Promise.all([inst.startPlanes(1), inst.startControllers(1)]);
}, 90_000);

afterAll(async () => {
  await stopAllSluice();
  await kapi?.stop();
}, 30_000);

describe.skipIf(!RUN)('the Gateway API path under the chart RBAC', () => {
  it('Gateway Programmed, its Service made, changed and deleted, route status written; nothing denied, every grant used', async () => {
    await until(
      'Gateway web Programmed',
      () => kapi.get<Gw>(`/apis/gateway.networking.k8s.io/v1/namespaces/${APP}/gateways/web`),
      (g) => g.status?.conditions?.some((c) => c.type === 'Programmed' && c.status === 'True') === true,
    );
    for (const plural of ['httproutes/web', 'grpcroutes/rpc'])
      await until(
        `${plural} has Sluice's parent status`,
        () => kapi.get<Route>(`/apis/gateway.networking.k8s.io/v1/namespaces/${APP}/${plural}`),
        (r) => r.status?.parents?.some((p) => p.controllerName === 'sluice.dev/gateway-controller') === true,
      );
    const svcPath = `/api/v1/namespaces/${APP}/services/${gatewayServiceName('web')}`;
    const made = await until(
      'the Gateway Service',
      () => kapi.get<Svc>(svcPath).catch(() => null),
      (s) => s !== null,
    );
    // Its type from the class's parameters ConfigMap, not the chart's serviceType (ClusterIP).
    expect(made!.spec.type).toBe('NodePort');
    // A second listener port: the Service is updated.
    const listener = { name: 'alt', port: 8080, protocol: 'HTTP' };
    const patch = JSON.stringify([{ op: 'add', path: '/spec/listeners/-', value: listener }]);
    await kapi.kubectl(['patch', 'gateway', 'web', '-n', APP, '--type', 'json', '-p', patch]);
    const updated = await until(
      'the Service has two ports',
      () => kapi.get<Svc>(svcPath),
      (s) => s.spec.ports.length === 2,
    );
    expect(updated.spec.ports.map((p) => p.port).sort()).toEqual([80, 8080]);
    // The Gateway deleted: its Service goes (kapi runs no garbage collector; the controller does).
    await kapi.kubectl(['delete', 'gateway', 'web', '-n', APP]);
    await until(
      'the Service deleted',
      () =>
        kapi.get<Svc>(svcPath).then(
          () => 'there',
          () => 'gone',
        ),
      (s) => s === 'gone',
    );
    await steadyGrantsUsed(inst, 3_000);
    expect(kapi.denials().map((d) => d.reason)).toEqual([]);
    const { granted, used } = inst.grants();
    expect(
      used.filter((u) => !granted.includes(u)),
      'allowed by something else than the chart',
    ).toEqual([]);
    // Every grant used but those of the GatewayRoute path (status of routes and plugins, Events),
    // which rbac-enforced.test.ts exercises, and those kapi leaves unusable.
    expect(
      granted.filter(
        (g) =>
          !used.includes(g) &&
          !/sluice\.dev\/gateway(routes|plugins)\/status|\/events /.test(g) &&
          !UNUSABLE_ON_KAPI.test(g),
      ),
    ).toEqual([]);
  }, 60_000);
});
