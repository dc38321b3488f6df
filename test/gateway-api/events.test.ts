/**
 * Events on Gateway API objects, as an operator sees them in `kubectl get events` (a real API
 * server, KUBECONFIG; a controller of this process and two data planes on 127.0.6.1/2): a
 * Gateway going live gets Normal Events (Accepted, Pending, Programmed), never a Warning; a listener
 * conflict (two protocols on one port), an unresolved certificate, a missing back end of an HTTPRoute or a GRPCRoute get a
 * Warning on that object naming the listener or parent, once (aggregated: the next status writes
 * do not repeat it); fixing the route gets a Normal Event.
 */
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, expect, it } from 'vitest';
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
const TOKEN = 'gwapi-events-token';
const HOSTS = ['127.0.6.1', '127.0.6.2'];

interface Event {
  type: string;
  reason: string;
  count: number;
  message: string;
  involvedObject: { apiVersion: string; kind: string; name: string; uid?: string };
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
  await ok(['delete', 'gatewayclass', CLASS, '--wait=false']).catch(() => {});
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
