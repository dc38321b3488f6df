/**
 * The chart installed on a private kapi (test/helpers/private-kapi.ts), its pods run as local
 * processes (local-pod.ts) with their ServiceAccounts' identities: what a test of the chart's
 * RBAC needs. Everything the chart renders is applied except the Deployments (no kubelet);
 * their pods run here instead, each with a kubeconfig minted for its ServiceAccount, as the
 * token Kubernetes mounts would authenticate it. The test writes the admin Service's
 * EndpointSlices, as Kubernetes would for a headless Service.
 *
 * Then, from rbac-authz.mjs's logs: the grants the chart gives the controller, those it used,
 * and assertLeastPrivilege().
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { expect } from 'vitest';
import { stringify } from 'yaml';
import { metricValue } from '../../helpers/processes.ts';
import type { PrivateKapi } from '../../helpers/private-kapi.ts';
import { find, type Manifest, render } from '../helm.ts';
import { type LocalPod, startLocalPod } from './local-pod.ts';

export const RELEASE = 'gw';

export async function until<T>(
  what: string,
  probe: () => Promise<T>,
  good: (v: T) => boolean,
  ms = 15_000,
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

/** sluice_controller_leader of a controller pod (-1 when it does not answer). */
export const leading = (c: LocalPod): Promise<number> =>
  fetch(c.url('metrics', '/metrics'))
    .then((r) => r.text())
    .then(
      (t) => metricValue(t, 'sluice_controller_leader'),
      () => -1,
    );

export type Conditions = Record<string, { status: string; reason: string; message: string }>;

export class ChartInstall {
  readonly kapi: PrivateKapi;
  /** The release namespace. */
  readonly ns: string;
  readonly values: object;
  manifests: Manifest[] = [];
  planes: LocalPod[] = [];
  controllers: LocalPod[] = [];
  #kubeconfigs = { controller: '', dataplane: '' };

  constructor(kapi: PrivateKapi, ns: string, values: object) {
    this.kapi = kapi;
    this.ns = ns;
    this.values = values;
  }

  /** The ServiceAccounts' user names. */
  get users() {
    const name = (c: string) => `system:serviceaccount:${this.ns}:${RELEASE}-sluice-${c}`;
    return { controller: name('controller'), dataplane: name('dataplane') };
  }

  /**
   * Renders the chart; creates the release namespace and `namespaces`; applies everything the
   * chart renders but the Deployments (its CRDs are the caller's: once per API server); mints
   * the ServiceAccounts' kubeconfigs.
   */
  async install(namespaces: string[] = []): Promise<void> {
    this.manifests = await render({ release: RELEASE, namespace: this.ns, values: this.values });
    // The namespaces first, then each object where the chart puts it: the release namespace
    // unless it names another (Roles). One kubectl, in that order.
    const objects = [
      ...[this.ns, ...namespaces].map((name) => ({
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: { name },
      })),
      ...this.manifests
        .filter((m) => m.kind !== 'Deployment')
        .map((m) =>
          m.kind.startsWith('Cluster') ? m : { ...m, metadata: { namespace: this.ns, ...m.metadata } },
        ),
    ];
    const sa = (c: string) => this.kapi.serviceAccount(this.ns, `${RELEASE}-sluice-${c}`);
    const [, controller, dataplane] = await Promise.all([
      this.kapi.kubectl(['apply', '-f', '-'], objects.map((m) => stringify(m)).join('---\n')),
      sa('controller'),
      sa('dataplane'),
    ]);
    this.#kubeconfigs = { controller, dataplane };
  }

  #start(component: 'controller' | 'dataplane', n: number): Promise<LocalPod[]> {
    const deployment = find(this.manifests, 'Deployment', `${RELEASE}-sluice-${component}`);
    return Promise.all(
      Array.from({ length: n }, (_, i) =>
        startLocalPod(
          deployment,
          this.ns,
          i,
          component === 'controller' ? 'readinessProbe' : 'livenessProbe',
          {
            kubectl: (args) => this.kapi.kubectl(args),
            env: { KUBECONFIG: this.#kubeconfigs[component] },
            // Started together, on a machine that may be busy: a bound, not an expectation.
            readyTimeoutMs: 60_000,
          },
        ),
      ),
    );
  }

  /** `n` replicas of the data plane, and their EndpointSlices (one per pod: each has its own port). */
  async startPlanes(n: number): Promise<void> {
    this.planes = await this.#start('dataplane', n);
    const admin = find(this.manifests, 'Service', `${RELEASE}-sluice-admin`);
    const port = admin.spec.ports[0];
    await this.kapi.kubectl(
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

  /** `n` replicas of the controller. */
  async startControllers(n: number): Promise<void> {
    this.controllers = await this.#start('controller', n);
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

  /** Status of GET path on every data plane (0: no answer). */
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

  async conditions(kind: 'gatewayroutes' | 'gatewayplugins', ns: string, name: string): Promise<Conditions> {
    const o = await this.kapi.get<{
      status?: { conditions?: { type: string; status: string; reason: string; message: string }[] };
    }>(`/apis/sluice.dev/v1alpha1/namespaces/${ns}/${kind}/${name}`);
    return Object.fromEntries((o.status?.conditions ?? []).map((c) => [c.type, c]));
  }

  /** Waits until the object says Programmed on every data plane. */
  programmed(kind: 'gatewayroutes' | 'gatewayplugins', ns: string, name: string): Promise<Conditions> {
    const n = this.planes.length;
    return until(
      `${kind} ${ns}/${name} Programmed on ${n} of ${n} pods`,
      () => this.conditions(kind, ns, name),
      (c) => c.Programmed?.status === 'True' && c.Programmed.message === `Running on ${n} of ${n} pods.`,
    );
  }

  /**
   * Every grant the chart gives the controller, as "<role> <group>/<resource> <verb>" with the
   * role named as rbac-authz.mjs names it, and every request of the controller the log shows
   * allowed, in the same form (a non-resource request: "<role> <path> <verb>").
   */
  grants(): { granted: string[]; used: string[] } {
    const granted = new Set<string>();
    for (const b of this.manifests.filter(
      (m) => m.kind === 'RoleBinding' || m.kind === 'ClusterRoleBinding',
    )) {
      const bindingNs = b.metadata.namespace ?? this.ns;
      const role = this.manifests.find(
        (m) =>
          m.kind === b.roleRef.kind &&
          m.metadata.name === b.roleRef.name &&
          (m.kind === 'ClusterRole' || (m.metadata.namespace ?? this.ns) === bindingNs),
      );
      expect(role, `${b.kind} ${b.metadata.name} binds a role the chart does not render`).toBeDefined();
      const name =
        role!.kind === 'ClusterRole'
          ? `ClusterRole ${role!.metadata.name}`
          : `Role ${bindingNs}/${role!.metadata.name}`;
      for (const r of role!.rules as { apiGroups: string[]; resources: string[]; verbs: string[] }[])
        for (const g of r.apiGroups)
          for (const res of r.resources) for (const v of r.verbs) granted.add(`${name} ${g}/${res} ${v}`);
    }
    const used = this.kapi
      .allowed()
      .filter((l) => l.user === this.users.controller)
      .map((l) =>
        l.path !== undefined
          ? `${l.role} ${l.path} ${l.verb}`
          : `${l.role} ${l.group}/${l.resource}${l.subresource ? `/${l.subresource}` : ''} ${l.verb}`,
      );
    return { granted: [...granted].sort(), used: [...new Set(used)].sort() };
  }

  async stop(): Promise<void> {
    await Promise.all([...this.controllers, ...this.planes].map((p) => p.process.stop(3_000)));
  }
}

/**
 * Least privilege, from the API server's side: nothing was denied; the data plane's identity
 * made no request at all (it needs none; no binding names it); every request of the
 * controller was allowed by the chart's own roles (not by the default policy); and every grant
 * of the chart was used (an unused grant is a privilege too many, or a test too few).
 */
/**
 * Grants of the chart no test on kapi can make the controller use: kapi serves no IngressClass
 * API (the controller's list gets 404, so it never watches), and these tests apply no Ingress
 * (so no Ingress status is written; test/k8s/ingress.test.ts writes it, with --publish-service,
 * without the chart's RBAC).
 */
export const UNUSABLE_ON_KAPI =
  /networking\.k8s\.io\/ingressclasses watch$|networking\.k8s\.io\/ingresses\/status patch$/;

/**
 * Waits (bounded) until the controller has used every grant it uses in steady operation: the
 * Lease's update comes with the leader's first renewal, which a fast test can finish before.
 */
export async function steadyGrantsUsed(inst: ChartInstall, timeoutMs = 10_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const { granted, used } = inst.grants();
    if (granted.every((g) => used.includes(g) || UNUSABLE_ON_KAPI.test(g)) || Date.now() > until) return;
    await new Promise((r) => setTimeout(r, 100));
  }
}

export function assertLeastPrivilege(inst: ChartInstall): void {
  expect(inst.kapi.denials().map((d) => d.reason)).toEqual([]);
  expect(
    inst.kapi.allowed().filter((l) => l.user === inst.users.dataplane),
    "the data plane's identity made requests",
  ).toEqual([]);
  const dataplaneSa = `${RELEASE}-sluice-dataplane`;
  expect(
    inst.manifests.filter((m) =>
      (m.subjects as { name: string }[] | undefined)?.some((s) => s.name === dataplaneSa),
    ),
  ).toEqual([]);
  const { granted, used } = inst.grants();
  expect(
    used.filter((u) => !granted.includes(u)),
    'requests allowed by something else than the chart',
  ).toEqual([]);
  expect(
    granted.filter((g) => !used.includes(g) && !UNUSABLE_ON_KAPI.test(g)),
    'grants of the chart the controller never used',
  ).toEqual([]);
  console.log(
    `[rbac] ${inst.ns}: ${granted.length} grants, each used; no denial; no request from the data plane`,
  );
}
