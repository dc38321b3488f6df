/**
 * Least privilege, enforced: the controller and the data planes run against an API server
 * that enforces RBAC (a private kapi with KAPI_RBAC=1: CI's shared kapi does not), under
 * exactly the Roles, ClusterRoles and bindings the chart renders, with the identities of the
 * chart's ServiceAccounts (kubeconfigs minted by kapi-user.sh, as their tokens would
 * authenticate them). The pods are the rendered Deployments run as local processes
 * (local-pod.ts); the test writes the admin Service's EndpointSlices, as Kubernetes would.
 *
 * What the controller does all goes through RBAC: lists and watches of every kind, status
 * patches, Events, the Lease (two replicas, the leader killed). Then: no request was denied,
 * the data plane's identity made no request at all (it needs none, and its ServiceAccount
 * mounts no token), and every grant of the chart was used (an unused grant is a privilege too
 * many). Not exercised: the relist after 410 Gone, which uses the list verb the start uses.
 *
 * Twice: watchNamespaces [] (a ClusterRole for the watched kinds, objects in another
 * namespace than the release's) and watchNamespaces [two namespaces] (Roles only).
 *
 * Needs ../shared/kapi (test/helpers/private-kapi.ts): skipped without it, failed under CI.
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { metricValue, stopAllSluice } from '../../helpers/processes.ts';
import { kapiMissing, type PrivateKapi, startPrivateKapi } from '../../helpers/private-kapi.ts';
import { startUpstream, type Upstream } from '../../helpers/servers.ts';
import { CHART, find, type Manifest, render } from '../helm.ts';
import { type LocalPod, startLocalPod } from './local-pod.ts';

if (kapiMissing !== null)
  console.warn(
    `test/chart/k8s/rbac-enforced.test.ts: ${kapiMissing}; ` +
      (process.env.CI ? 'CI is set, so the tests run and fail' : 'skipped'),
  );

const RELEASE = 'gw';
const id = randomBytes(3).toString('hex');

let kapi: PrivateKapi;
let up: Upstream;

async function until<T>(
  what: string,
  probe: () => Promise<T>,
  good: (v: T) => boolean,
  ms = 15_000,
): Promise<T> {
  const end = Date.now() + ms;
  let last = await probe();
  while (!good(last)) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}; last: ${JSON.stringify(last)}`);
    await sleep(50);
    last = await probe();
  }
  return last;
}

type Conditions = Record<string, { status: string; reason: string; message: string }>;

async function conditions(kind: string, ns: string, name: string): Promise<Conditions> {
  const o = JSON.parse(await kapi.kubectl(['get', kind, name, '-n', ns, '-o', 'json'])) as {
    status?: { conditions?: { type: string; status: string; reason: string; message: string }[] };
  };
  return Object.fromEntries((o.status?.conditions ?? []).map((c) => [c.type, c]));
}

const programmed = (kind: string, ns: string, name: string, pods: number) =>
  until(
    `${kind} ${ns}/${name} Programmed on ${pods} of ${pods} pods`,
    () => conditions(kind, ns, name),
    (c) => c.Programmed?.status === 'True' && c.Programmed.message === `Running on ${pods} of ${pods} pods.`,
  );

// The objects a user applies: a key-auth plugin whose key is in a Secret, a route using it, a
// route to a Service.
const secret = (key: string) => `
apiVersion: v1
kind: Secret
metadata: { name: api-keys }
stringData: { alice: ${key} }
`;
const keyAuth = `
apiVersion: sluice.dev/v1alpha1
kind: GatewayPlugin
metadata: { name: keys }
spec:
  plugin: key-auth
  config: { consumers: [{ name: alice, secretKeyRef: { name: api-keys, key: alice } }] }
`;
const route = (name: string, path: string, plugins: string[] = []) => `
apiVersion: sluice.dev/v1alpha1
kind: GatewayRoute
metadata: { name: ${name} }
spec:
  service: { name: ${name}, url: "${up.url}" }
  plugins: [${plugins.map((p) => `{ name: ${p} }`).join(', ')}]
  routes: [{ name: main, paths: ["${path}"] }]
`;
const service = `
apiVersion: v1
kind: Service
metadata: { name: backend }
spec: { ports: [{ name: http, port: 8080 }] }
`;
const serviceRoute = `
apiVersion: sluice.dev/v1alpha1
kind: GatewayRoute
metadata: { name: by-service }
spec:
  service: { name: backend, backendRef: { name: backend, port: 8080 } }
  routes: [{ name: main, paths: ["/rbac/by-service"] }]
`;

/** One installation of the chart on the RBAC kapi, its pods run locally. */
class Install {
  readonly ns: string;
  readonly values: object;
  manifests: Manifest[] = [];
  controllerConfig = '';
  dataplaneConfig = '';
  planes: LocalPod[] = [];
  controllers: LocalPod[] = [];

  constructor(ns: string, values: object) {
    this.ns = ns;
    this.values = values;
  }

  get sa() {
    const name = (c: string) => `system:serviceaccount:${this.ns}:${RELEASE}-sluice-${c}`;
    return { controller: name('controller'), dataplane: name('dataplane') };
  }

  /**
   * Renders the chart; creates the release namespace and `namespaces`; applies everything the
   * chart renders but the Deployments (the CRDs are applied once for all); mints the identities.
   */
  async install(namespaces: string[]): Promise<void> {
    this.manifests = await render({ release: RELEASE, namespace: this.ns, values: this.values });
    await kapi.kubectl(
      ['apply', '-f', '-'],
      [this.ns, ...namespaces]
        .map((n) => `apiVersion: v1\nkind: Namespace\nmetadata: { name: ${n} }\n`)
        .join('---\n'),
    );
    // Each where the chart puts it: the release namespace unless it names another (Roles).
    const rest = this.manifests
      .filter((m) => m.kind !== 'Deployment')
      .map((m) =>
        m.kind.startsWith('Cluster') ? m : { ...m, metadata: { namespace: this.ns, ...m.metadata } },
      );
    const sa = (c: string) => kapi.serviceAccount(this.ns, `${RELEASE}-sluice-${c}`);
    [, this.controllerConfig, this.dataplaneConfig] = await Promise.all([
      kapi.kubectl(['apply', '-f', '-'], rest.map((m) => stringify(m)).join('---\n')),
      sa('controller'),
      sa('dataplane'),
    ]);
  }

  /** The rendered data plane's replicas, with the data plane ServiceAccount's identity, and their EndpointSlices. */
  async startPlanes(n: number): Promise<void> {
    const deployment = find(this.manifests, 'Deployment', `${RELEASE}-sluice-dataplane`);
    this.planes = await Promise.all(
      Array.from({ length: n }, (_, i) =>
        startLocalPod(deployment, this.ns, i, 'livenessProbe', {
          kubectl: (args) => kapi.kubectl(args),
          env: { KUBECONFIG: this.dataplaneConfig },
        }),
      ),
    );
    const admin = find(this.manifests, 'Service', `${RELEASE}-sluice-admin`);
    const port = admin.spec.ports[0];
    await kapi.kubectl(
      ['apply', '-n', this.ns, '-f', '-'],
      this.planes
        .map(
          (p) => `
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: { name: ${p.name}, labels: { kubernetes.io/service-name: ${admin.metadata.name} } }
addressType: IPv4
ports: [{ name: ${port.name}, port: ${p.ports[port.targetPort]} }]
endpoints: [{ addresses: ["127.0.0.1"], conditions: { ready: false }, targetRef: { kind: Pod, name: ${p.name} } }]
`,
        )
        .join('---'),
    );
  }

  /** `n` replicas of the rendered controller, with the controller ServiceAccount's identity. */
  async startControllers(n: number): Promise<void> {
    const deployment = find(this.manifests, 'Deployment', `${RELEASE}-sluice-controller`);
    this.controllers = await Promise.all(
      Array.from({ length: n }, (_, i) =>
        startLocalPod(deployment, this.ns, i, 'readinessProbe', {
          kubectl: (args) => kapi.kubectl(args),
          env: { KUBECONFIG: this.controllerConfig },
        }),
      ),
    );
  }

  /** The controller holding the Lease, once exactly one says it leads. */
  async leader(): Promise<LocalPod> {
    const flags = await until(
      'one leader',
      () => Promise.all(this.controllers.map(leading)),
      (v) => v.filter((x) => x === 1).length === 1,
    );
    return this.controllers[flags.indexOf(1)];
  }

  /** Status of GET path on every data plane. */
  statuses(path: string, headers: Record<string, string> = {}): Promise<number[]> {
    return Promise.all(
      this.planes.map((p) =>
        fetch(p.url('http', path), { headers }).then(
          async (r) => {
            await r.arrayBuffer();
            return r.status;
          },
          () => 0,
        ),
      ),
    );
  }

  /**
   * Every grant the chart gives the controller, "<role> <group>/<resource> <verb>" in the
   * form rbac-authz.mjs names the role that allowed a request, and those the log shows used.
   */
  grants(): { granted: string[]; used: string[] } {
    const granted = new Set<string>();
    for (const b of this.manifests.filter(
      (m) => m.kind === 'RoleBinding' || m.kind === 'ClusterRoleBinding',
    )) {
      const role = this.manifests.find(
        (m) =>
          m.kind === b.roleRef.kind &&
          m.metadata.name === b.roleRef.name &&
          (m.kind === 'ClusterRole' ||
            (m.metadata.namespace ?? this.ns) === (b.metadata.namespace ?? this.ns)),
      );
      expect(role, `${b.kind} ${b.metadata.name} binds a role the chart does not render`).toBeDefined();
      const name =
        role!.kind === 'ClusterRole'
          ? `ClusterRole ${role!.metadata.name}`
          : `Role ${b.metadata.namespace ?? this.ns}/${role!.metadata.name}`;
      for (const r of role!.rules as { apiGroups: string[]; resources: string[]; verbs: string[] }[])
        for (const g of r.apiGroups)
          for (const res of r.resources) for (const v of r.verbs) granted.add(`${name} ${g}/${res} ${v}`);
    }
    const used = kapi
      .allowed()
      .filter((l) => l.user === this.sa.controller && l.role !== undefined)
      .map((l) => `${l.role} ${l.group}/${l.resource}${l.subresource ? `/${l.subresource}` : ''} ${l.verb}`);
    return { granted: [...granted].sort(), used: [...new Set(used)].sort() };
  }

  async stop(): Promise<void> {
    await Promise.all([...this.controllers, ...this.planes].map((p) => p.process.stop(3_000)));
  }
}

const leading = (c: LocalPod) =>
  fetch(c.url('metrics', '/metrics'))
    .then((r) => r.text())
    .then(
      (t) => metricValue(t, 'sluice_controller_leader'),
      () => -1,
    );

/** Nothing denied, the data plane never asked, and every grant used (listed if not). */
function assertLeastPrivilege(inst: Install): void {
  const denials = kapi.denials();
  expect(denials.map((d) => d.reason)).toEqual([]);
  const byDataplane = kapi.allowed().filter((l) => l.user === inst.sa.dataplane);
  expect(byDataplane, "the data plane's identity made requests").toEqual([]);
  const { granted, used } = inst.grants();
  // Every request the controller made was allowed by one of the chart's own roles …
  expect(used.every((u) => granted.some((g) => u === g))).toBe(true);
  // … and every grant was needed by something the test made the controller do.
  const unused = granted.filter((g) => !used.includes(g));
  if (unused.length) console.log(`[rbac] granted but not used:\n  ${unused.join('\n  ')}`);
  expect(unused).toEqual([]);
}

const apply = (ns: string, yaml: string) => kapi.kubectl(['apply', '-n', ns, '-f', '-'], yaml);

const RUN = kapiMissing === null || !!process.env.CI;

beforeAll(async () => {
  if (!RUN) return;
  // The watch cache on, as in a real cluster: list items then carry no kind (CI's shared kapi
  // runs without it, and its list items have one).
  [kapi, up] = await Promise.all([startPrivateKapi({ rbac: true }), startUpstream()]);
  await kapi.kubectl(['apply', '--server-side', '-f', join(CHART, 'crds')]);
  await kapi.kubectl([
    'wait',
    '--for=condition=Established',
    '--timeout=30s',
    'crd/gatewayroutes.sluice.dev',
    'crd/gatewayplugins.sluice.dev',
  ]);
}, 60_000);

afterAll(async () => {
  await stopAllSluice();
  await Promise.all([kapi?.stop(), up?.close()]);
}, 30_000);

// Marked "issue 22, item 0": fails while list items lack `kind` (a real API server's lists, with
// its watch cache, carry none): a Secret listed at the controller's start is then "not found",
// and the routes using it stay unprogrammed until the Secret is touched.

describe.skipIf(!RUN)('watchNamespaces [] (a ClusterRole): the controller under the chart RBAC', () => {
  const inst = new Install(`sluice-rbac-${id}`, {
    watchNamespaces: [],
    controller: { replicas: 2, leaseSeconds: 3 },
    dataplane: { replicas: 2, preStopSeconds: 0, drainSeconds: 1 },
  });
  const APP = `shop-${id}`;
  const apply = (yaml: string) => kapi.kubectl(['apply', '-n', APP, '-f', '-'], yaml);

  beforeAll(async () => {
    await inst.install([APP]);
    // Everything exists before the controllers start: listed at their start, not watched.
    await apply(
      [secret('alice-key-1'), keyAuth, route('keyed', '/rbac/keyed', ['keys']), service, serviceRoute].join(
        '---',
      ),
    );
    await Promise.all([inst.startPlanes(2), inst.startControllers(2)]);
  }, 60_000);

  afterAll(() => inst.stop(), 30_000);

  it('objects present before the controllers started are Programmed on 2 of 2 pods: a key-auth route (Secret), a Service backendRef [issue 22, item 0]', async () => {
    await inst.leader();
    for (const [kind, name] of [
      ['gwr', 'keyed'],
      ['gwp', 'keys'],
      ['gwr', 'by-service'],
    ])
      await programmed(kind, APP, name, 2);
    expect(await inst.statuses('/rbac/keyed/x', { 'x-api-key': 'alice-key-1' })).toEqual([200, 200]);
    expect(await inst.statuses('/rbac/keyed/x')).toEqual([401, 401]);
  }, 30_000);

  it('edits: a new key in the Secret, a new route using the plugin; a deleted route leaves every pod', async () => {
    await apply(`${secret('alice-key-2')}---${route('second', '/rbac/second', ['keys'])}`);
    await until(
      'the new key on both pods',
      () => inst.statuses('/rbac/second/x', { 'x-api-key': 'alice-key-2' }),
      (s) => s.every((x) => x === 200),
    );
    expect(await inst.statuses('/rbac/keyed/x', { 'x-api-key': 'alice-key-1' })).toEqual([401, 401]);
    await programmed('gwr', APP, 'second', 2);
    await kapi.kubectl(['delete', 'gwr', 'second', '-n', APP]);
    await until(
      '404 on both pods',
      () => inst.statuses('/rbac/second/x', { 'x-api-key': 'alice-key-2' }),
      (s) => s.every((x) => x === 404),
    );
  }, 30_000);

  it('a broken reference: ResolvedRefs=False and a Warning Event, both written by the controller', async () => {
    await apply(route('broken', '/rbac/broken', ['nope']));
    const c = await until(
      'ResolvedRefs=False',
      () => conditions('gwr', APP, 'broken'),
      (c) => c.ResolvedRefs?.status === 'False',
    );
    expect(c.ResolvedRefs.message).toContain('spec.plugins[0].name');
    await until(
      'a Warning Event on the route',
      async () =>
        (
          JSON.parse(await kapi.kubectl(['get', 'events', '-n', APP, '-o', 'json'])) as {
            items: { involvedObject: { name: string }; type: string }[];
          }
        ).items.filter((e) => e.involvedObject.name === 'broken' && e.type === 'Warning'),
      (events) => events.length > 0,
    );
    await kapi.kubectl(['delete', 'gwr', 'broken', '-n', APP]);
  }, 30_000);

  it('SIGKILL the leader: the standby takes the Lease and programs the next edit', async () => {
    const leader = await inst.leader();
    const standby = inst.controllers.find((c) => c !== leader)!;
    expect(await leading(standby)).toBe(0);
    await leader.process.kill('SIGKILL');
    await until(
      'the standby leads',
      () => leading(standby),
      (v) => v === 1,
      15_000,
    );
    await apply(route('after-failover', '/rbac/after', ['keys']));
    await programmed('gwr', APP, 'after-failover', 2);
    expect(await inst.statuses('/rbac/after/x', { 'x-api-key': 'alice-key-2' })).toEqual([200, 200]);
  }, 30_000);

  it('nothing was denied, the data plane made no request, every grant of the chart was used; every route Programmed [issue 22, item 0]', async () => {
    expect(inst.manifests.filter((m) => m.kind === 'ClusterRole').length).toBe(1);
    assertLeastPrivilege(inst);
    const routes = JSON.parse(await kapi.kubectl(['get', 'gwr', '-n', APP, '-o', 'json'])) as {
      items: { metadata: { name: string } }[];
    };
    expect(routes.items.map((r) => r.metadata.name).sort()).toEqual([
      'after-failover',
      'by-service',
      'keyed',
    ]);
    for (const r of routes.items) await programmed('gwr', APP, r.metadata.name, 2);
  }, 30_000);
});

describe.skipIf(!RUN)(
  'watchNamespaces [two namespaces] (Roles only): the controller under the chart RBAC',
  () => {
    const [A, B] = [`shop-a-${id}`, `shop-b-${id}`];
    const inst = new Install(`sluice-rbac-ns-${id}`, {
      watchNamespaces: [A, B],
      controller: { replicas: 1, leaseSeconds: 3 },
      dataplane: { replicas: 1, preStopSeconds: 0, drainSeconds: 1 },
    });
    const transformer = `
apiVersion: sluice.dev/v1alpha1
kind: GatewayPlugin
metadata: { name: version }
spec: { plugin: request-transformer, config: { add: { headers: ["X-Version:b"] } } }
`;

    beforeAll(async () => {
      await inst.install([A, B]);
      await kapi.kubectl(
        ['apply', '-n', A, '-f', '-'],
        [secret('alice-key-a'), keyAuth, route('keyed', '/rbac/a', ['keys'])].join('---'),
      );
      await kapi.kubectl(
        ['apply', '-n', B, '-f', '-'],
        [transformer, service, serviceRoute.replace('by-service', 'by-service-b')].join('---'),
      );
      await Promise.all([inst.startPlanes(1), inst.startControllers(1)]);
    }, 60_000);

    afterAll(() => inst.stop(), 30_000);

    it('routes, plugins, Secrets and Services of both namespaces: Programmed; nothing denied, the data plane made no request, every grant used [issue 22, item 0]', async () => {
      expect(inst.manifests.filter((m) => m.kind.startsWith('Cluster'))).toEqual([]);
      await inst.leader();
      await apply(B, route('plain', '/rbac/plain', ['version']));
      for (const [kind, ns, name] of [
        ['gwr', A, 'keyed'],
        ['gwp', A, 'keys'],
        ['gwr', B, 'by-service-b'],
        ['gwr', B, 'plain'],
        ['gwp', B, 'version'],
      ])
        await programmed(kind, ns, name, 1);
      expect(await inst.statuses('/rbac/a/x', { 'x-api-key': 'alice-key-a' })).toEqual([200]);
      assertLeastPrivilege(inst);
    }, 30_000);
  },
);
