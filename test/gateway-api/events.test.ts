/**
 * Events on Gateway API objects, as an operator sees them in `kubectl get events` (a real API
 * server, KUBECONFIG; a controller of this process and two data planes on 127.0.6.1/2): a
 * Gateway going live gets Normal Events (Accepted, Pending, Programmed), never a Warning; a listener
 * conflict (two protocols on one port), an unresolved certificate, a missing back end of an HTTPRoute or a GRPCRoute get a
 * Warning on that object naming the listener or parent, once (aggregated: the next status writes
 * do not repeat it); fixing the route gets a Normal Event. GatewayClasses (cluster-scoped:
 * their Events are in the controller's namespace, with no namespace on the involved object): one
 * Normal Accepted; a parametersRef that does not resolve, one Warning InvalidParameters; fixed, a
 * Normal Accepted; broken and fixed the same way again, the same two Events' counts go to 2.
 */
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Controller } from '../../controller/main.ts';
import type { DataPlane } from '../../dataplane/main.ts';
import {
  crdsAndNamespace,
  serviceWithPods,
  startControllerIn,
  startDataPlanesIn,
} from '../helpers/controller-on-kapi.ts';
import { installGatewayApiCrds } from '../helpers/gateway-api/crds.ts';
import { ok } from '../helpers/kubectl.ts';
import { until } from '../helpers/until.ts';

const ID = randomBytes(3).toString('hex');
const NS = `sluice-gwevents-${ID}`;
const CLASS = `sluice-events-${ID}`;
const BAD_CLASS = `sluice-events-bad-${ID}`;
const TOKEN = 'gwapi-events-token';
const HOSTS = ['127.0.6.1', '127.0.6.2'];

interface Event {
  type: string;
  reason: string;
  count: number;
  message: string;
  involvedObject: { apiVersion: string; kind: string; name: string; namespace?: string; uid?: string };
}
const events = async (): Promise<Event[]> =>
  (JSON.parse(await ok(['get', 'events', '-n', NS, '-o', 'json'])) as { items: Event[] }).items;
const of = (list: Event[], kind: string, name: string) =>
  list.filter((e) => e.involvedObject.kind === kind && e.involvedObject.name === name);
const apply = (yaml: string) => ok(['apply', '-n', NS, '-f', '-'], yaml);
const conditionOf = async (kind: string, name: string, type: string) => {
  const o = JSON.parse(await ok(['get', kind, name, '-n', NS, '-o', 'json'])) as {
    status?: {
      conditions?: { type: string; status: string }[];
      parents?: { conditions: { type: string; status: string; reason: string }[] }[];
    };
  };
  return [...(o.status?.conditions ?? []), ...(o.status?.parents?.flatMap((p) => p.conditions) ?? [])].find(
    (c) => c.type === type,
  );
};

let planes: DataPlane[] = [];
let controller: Controller;

beforeAll(async () => {
  await installGatewayApiCrds();
  await crdsAndNamespace(NS);
  planes = await startDataPlanesIn(NS, HOSTS, { adminToken: TOKEN });
  await ok(
    ['apply', '-f', '-'],
    `
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: { name: ${CLASS} }
spec: { controllerName: sluice.dev/gateway-controller }
---
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: { name: ${BAD_CLASS} }
spec:
  controllerName: sluice.dev/gateway-controller
  parametersRef: { group: "", kind: ConfigMap, name: class-params, namespace: ${NS} }
`,
  );
  await apply(`
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: good }
spec:
  gatewayClassName: ${CLASS}
  listeners: [{ name: http, protocol: HTTP, port: 80 }]
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: faulty }
spec:
  gatewayClassName: ${CLASS}
  listeners:
  - { name: a, protocol: HTTP, port: 8080 }
  - name: b
    protocol: HTTPS
    port: 8080
    tls: { certificateRefs: [{ name: no-such-secret }] }
---
${serviceWithPods('web', [{ host: '127.0.6.9', port: 3000 }], 8080)}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: { name: fine }
spec:
  parentRefs: [{ name: good }]
  rules: [{ backendRefs: [{ name: web, port: 8080 }] }]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: { name: dangling }
spec:
  parentRefs: [{ name: good, sectionName: http }]
  rules: [{ backendRefs: [{ name: not-there, port: 8080 }] }]
---
apiVersion: gateway.networking.k8s.io/v1
kind: GRPCRoute
metadata: { name: grpc-dangling }
spec:
  parentRefs: [{ name: good }]
  rules: [{ backendRefs: [{ name: grpc-not-there, port: 9000 }] }]
`);
  controller = await startControllerIn(NS, TOKEN, `sluice-gwevents-${ID}`, {
    gatewayApi: true,
    gatewayPorts: { first: 23_600, last: 23_649 },
    gatewayServiceType: 'ClusterIP',
    resyncMs: 500,
  });
  await until(
    async () => (await conditionOf('gateway', 'good', 'Programmed'))?.status === 'True',
    30_000,
    100,
  );
  await until(
    async () => (await conditionOf('grpcroute', 'grpc-dangling', 'ResolvedRefs'))?.status === 'False',
    20_000,
    100,
  );
}, 120_000);

afterAll(async () => {
  await controller?.close();
  await Promise.all(planes.map((p) => p.close()));
  await ok(['delete', 'gatewayclass', CLASS, BAD_CLASS, '--wait=false']).catch(() => {});
  await ok(['delete', 'namespace', NS, '--wait=false']).catch(() => {});
}, 60_000);

it('a Gateway going live gets Normal Events only: Accepted, Programmed Pending (if the pods lag), then Programmed', async () => {
  await until(
    async () => of(await events(), 'Gateway', 'good').some((e) => e.reason === 'Programmed'),
    10_000,
    100,
  );
  const good = of(await events(), 'Gateway', 'good');
  expect(good.filter((e) => e.type === 'Warning')).toEqual([]);
  // The CRD's defaults (Unknown) turning True are changes; the listener's conditions, True from their first write, are not.
  expect(good.map((e) => e.reason).filter((r) => r !== 'Pending')).toEqual(['Accepted', 'Programmed']);
  expect(good.find((e) => e.reason === 'Programmed')?.message).toBe(
    'Programmed=True: Running on 2 of 2 pods.',
  );
  const uid = await ok(['get', 'gateway', 'good', '-n', NS, '-o', 'jsonpath={.metadata.uid}']);
  expect(good[0].involvedObject).toMatchObject({ apiVersion: 'gateway.networking.k8s.io/v1', uid });
  // A route that is fine gets nothing: Accepted and ResolvedRefs True from the start are no news.
  expect(of(await events(), 'HTTPRoute', 'fine')).toEqual([]);
});

it('a listener conflict and an unresolved certificate are Warnings on the Gateway, naming the listener', async () => {
  await until(
    async () => of(await events(), 'Gateway', 'faulty').some((e) => e.reason === 'InvalidCertificateRef'),
    10_000,
    100,
  );
  const faulty = of(await events(), 'Gateway', 'faulty');
  const warning = (reason: string) => faulty.filter((e) => e.type === 'Warning' && e.reason === reason);
  expect(
    warning('ProtocolConflict')
      .map((e) => e.message.split(':')[1].trim())
      .sort(),
  ).toEqual(['listener a', 'listener b']);
  expect(warning('InvalidCertificateRef')).toMatchObject([
    { count: 1, message: expect.stringMatching(/^ResolvedRefs=False: listener b: .*no-such-secret/) },
  ]);
  expect(faulty.filter((e) => e.type === 'Normal').map((e) => e.reason)).not.toContain('NoConflicts');
});

it('a missing back end is one Warning on the HTTPRoute and on the GRPCRoute, naming the parent; not repeated by later writes; fixed, a Normal Event', async () => {
  const list = await events();
  expect(of(list, 'HTTPRoute', 'dangling')).toMatchObject([
    {
      type: 'Warning',
      reason: 'BackendNotFound',
      count: 1,
      message: expect.stringMatching(
        /^ResolvedRefs=False: parent sluice-gwevents-\w+\/good sectionName http: /,
      ),
      involvedObject: { apiVersion: 'gateway.networking.k8s.io/v1' },
    },
  ]);
  expect(of(list, 'GRPCRoute', 'grpc-dangling')).toMatchObject([
    { type: 'Warning', reason: 'BackendNotFound', count: 1, involvedObject: { kind: 'GRPCRoute' } },
  ]);
  // More status writes (a new attached route changes the Gateway's listener count): no new Events for the routes.
  await apply(`
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: { name: another }
spec:
  parentRefs: [{ name: good }]
  rules: [{ backendRefs: [{ name: web, port: 8080 }] }]
`);
  await sleep(2_000);
  expect(of(await events(), 'HTTPRoute', 'dangling')).toMatchObject([
    { reason: 'BackendNotFound', count: 1 },
  ]);
  // The missing Service appears: ResolvedRefs turns True, a Normal Event.
  await apply(`
apiVersion: v1
kind: Service
metadata: { name: not-there }
spec: { ports: [{ name: http, port: 8080, targetPort: 3000 }] }
`);
  await until(
    async () => of(await events(), 'HTTPRoute', 'dangling').some((e) => e.reason === 'ResolvedRefs'),
    15_000,
    100,
  );
  expect(of(await events(), 'HTTPRoute', 'dangling').map((e) => [e.type, e.reason])).toEqual([
    ['Warning', 'BackendNotFound'],
    ['Normal', 'ResolvedRefs'],
  ]);
});

describe("GatewayClass Events (in the controller's namespace)", () => {
  const classAccepted = async (name: string) =>
    (
      JSON.parse(await ok(['get', 'gatewayclass', name, '-o', 'json'])) as {
        status?: { conditions?: { type: string; status: string; reason: string }[] };
      }
    ).status?.conditions?.find((c) => c.type === 'Accepted');
  const params = (data: string) =>
    apply(`
apiVersion: v1
kind: ConfigMap
metadata: { name: class-params }
data: { ${data} }
`);

  it('an accepted class: one Normal Accepted Event, on the cluster-scoped object', async () => {
    await until(async () => of(await events(), 'GatewayClass', CLASS).length > 0, 10_000, 100);
    const uid = await ok(['get', 'gatewayclass', CLASS, '-o', 'jsonpath={.metadata.uid}']);
    const list = of(await events(), 'GatewayClass', CLASS);
    expect(list).toMatchObject([
      {
        type: 'Normal',
        reason: 'Accepted',
        count: 1,
        message: 'Accepted=True: Sluice serves Gateways of this class.',
        involvedObject: { apiVersion: 'gateway.networking.k8s.io/v1', uid },
      },
    ]);
    expect(list[0].involvedObject.namespace).toBeUndefined();
  });

  it('a parametersRef that does not resolve: one Warning InvalidParameters naming it; fixed, Normal Accepted; broken and fixed again, the same two Events counted twice', async () => {
    await until(async () => of(await events(), 'GatewayClass', BAD_CLASS).length > 0, 10_000, 100);
    const notFound = `Accepted=False: spec.parametersRef: ConfigMap ${NS}/class-params not found (it must be in a namespace the controller watches)`;
    expect(of(await events(), 'GatewayClass', BAD_CLASS)).toMatchObject([
      { type: 'Warning', reason: 'InvalidParameters', count: 1, message: notFound },
    ]);
    // Other writes (a Gateway's status) do not repeat it.
    await sleep(1_500);
    expect(of(await events(), 'GatewayClass', BAD_CLASS)).toHaveLength(1);
    await params('serviceType: ClusterIP');
    await until(async () => (await classAccepted(BAD_CLASS))?.status === 'True', 15_000, 100);
    await until(async () => of(await events(), 'GatewayClass', BAD_CLASS).length === 2, 10_000, 100);
    await ok(['delete', 'configmap', 'class-params', '-n', NS]);
    await until(async () => (await classAccepted(BAD_CLASS))?.status === 'False', 15_000, 100);
    await params('serviceType: ClusterIP');
    await until(
      async () => of(await events(), 'GatewayClass', BAD_CLASS).every((e) => e.count === 2),
      15_000,
      100,
    );
    expect(
      of(await events(), 'GatewayClass', BAD_CLASS).map((e) => [e.type, e.reason, e.count, e.message]),
    ).toEqual([
      ['Warning', 'InvalidParameters', 2, notFound],
      ['Normal', 'Accepted', 2, 'Accepted=True: Sluice serves Gateways of this class.'],
    ]);
  });
});
