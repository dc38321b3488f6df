/**
 * Least privilege, checked against the code: what the rendered Roles/ClusterRoles grant the
 * controller's ServiceAccount (through their bindings) is exactly what
 * controller/source/api-access.ts declares, the list Kube refuses to go beyond: every declared
 * verb where the code needs it, nothing else (no "*", no Secrets outside watchNamespaces,
 * no ClusterRole unless every namespace is watched).
 */
import { describe, expect, it } from 'vitest';
import { API_ACCESS, type ApiAccess } from '../../controller/source/api-access.ts';
import { type Manifest, PRESETS, render } from './helm.ts';

const RELEASE_NS = 'sluice';
const SA = { kind: 'ServiceAccount', name: 'gw-sluice-controller', namespace: RELEASE_NS };

interface Rule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
  resourceNames?: string[];
}

/** "namespace|* group/resource verb" for every grant that reaches `subject`. */
function grants(ms: Manifest[], subject = SA): string[] {
  const roles = new Map(
    ms
      .filter((m) => m.kind === 'Role' || m.kind === 'ClusterRole')
      .map((m) => [`${m.kind}/${m.metadata.namespace ?? RELEASE_NS}/${m.metadata.name}`, m]),
  );
  const out = new Set<string>();
  for (const b of ms.filter((m) => m.kind === 'RoleBinding' || m.kind === 'ClusterRoleBinding')) {
    const bound = (b.subjects as (typeof SA)[]).some(
      (s) => s.kind === subject.kind && s.name === subject.name && s.namespace === subject.namespace,
    );
    if (!bound) continue;
    const ns = b.kind === 'ClusterRoleBinding' ? '*' : (b.metadata.namespace ?? RELEASE_NS);
    const key =
      b.roleRef.kind === 'ClusterRole'
        ? `ClusterRole/${RELEASE_NS}/${b.roleRef.name}`
        : `Role/${b.metadata.namespace ?? RELEASE_NS}/${b.roleRef.name}`;
    const role = roles.get(key);
    expect(role, `${b.kind} ${b.metadata.name} binds a role the chart does not render`).toBeDefined();
    for (const r of role!.rules as Rule[]) {
      expect(r.resourceNames, `${key}: resourceNames are not used`).toBeUndefined();
      for (const g of r.apiGroups)
        for (const res of r.resources) for (const v of r.verbs) out.add(`${ns} ${g}/${res} ${v}`);
    }
  }
  return [...out].sort();
}

/**
 * What API_ACCESS says the controller needs, given the watched namespaces ([]: all) and whether
 * it serves the Gateway API and Ingresses (the chart's gatewayAPI.enabled and ingress.enabled,
 * both on by default).
 */
function needed(watched: string[], gatewayApi = true, ingress = true): string[] {
  const where = (a: ApiAccess) =>
    a.scope === 'cluster'
      ? ['*']
      : a.scope === 'watched namespaces'
        ? watched.length
          ? watched
          : ['*']
        : [RELEASE_NS];
  // A resource may be declared for two scopes (EndpointSlices: the watched namespaces and the
  // data plane's): granted once where they meet, and not again in a namespace a "*" grant covers.
  const declared = (API_ACCESS as readonly ApiAccess[]).filter(
    (a) => (gatewayApi || a.feature !== 'gateway-api') && (ingress || a.feature !== 'ingress'),
  );
  const all = new Set(
    declared.flatMap((a) =>
      where(a).flatMap((ns) => a.verbs.map((v) => `${ns} ${a.group}/${a.resource} ${v}`)),
    ),
  );
  return [...all].filter((g) => g.startsWith('* ') || !all.has(`* ${g.slice(g.indexOf(' ') + 1)}`)).sort();
}

describe('the controller RBAC is exactly api-access.ts', () => {
  it('default: the release namespace only, all in Roles but the cluster-scoped Gateway API and IngressClass reads', async () => {
    const ms = await render();
    expect(grants(ms)).toEqual(needed([RELEASE_NS]));
    expect(ms.filter((m) => m.kind.startsWith('Cluster')).map((m) => `${m.kind}/${m.metadata.name}`)).toEqual(
      [
        'ClusterRole/gw-sluice-sluice-ingress',
        'ClusterRole/gw-sluice-sluice-gateway-api',
        'ClusterRoleBinding/gw-sluice-sluice-ingress',
        'ClusterRoleBinding/gw-sluice-sluice-gateway-api',
      ],
    );
    expect(grants(ms).filter((g) => g.startsWith('* '))).toEqual([
      '* /namespaces list',
      '* /namespaces watch',
      '* apiextensions.k8s.io/customresourcedefinitions list',
      '* apiextensions.k8s.io/customresourcedefinitions watch',
      '* gateway.networking.k8s.io/gatewayclasses list',
      '* gateway.networking.k8s.io/gatewayclasses watch',
      '* gateway.networking.k8s.io/gatewayclasses/status patch',
      '* networking.k8s.io/ingressclasses list',
      '* networking.k8s.io/ingressclasses watch',
    ]);
    // Ingresses and their status in the watched namespaces, IngressClasses cluster-wide.
    expect(grants(ms).filter((g) => g.includes('networking.k8s.io/ingress'))).toEqual([
      '* networking.k8s.io/ingressclasses list',
      '* networking.k8s.io/ingressclasses watch',
      'sluice networking.k8s.io/ingresses list',
      'sluice networking.k8s.io/ingresses watch',
      'sluice networking.k8s.io/ingresses/status patch',
    ]);
  });

  it('gatewayAPI.enabled false: none of the Gateway API access, no ClusterRole but IngressClass reads, no Service writes', async () => {
    const ms = await render({ values: { gatewayAPI: { enabled: false } } });
    expect(grants(ms)).toEqual(needed([RELEASE_NS], false));
    expect(ms.filter((m) => m.kind.startsWith('Cluster')).map((m) => `${m.kind}/${m.metadata.name}`)).toEqual(
      ['ClusterRole/gw-sluice-sluice-ingress', 'ClusterRoleBinding/gw-sluice-sluice-ingress'],
    );
    expect(grants(ms).filter((g) => /gateway\.networking|\/services (create|update|delete)/.test(g))).toEqual(
      [],
    );
  });

  it('ingress.enabled false: none of the Ingress access (no IngressClass ClusterRole), and the controller runs with --ingress off', async () => {
    const ms = await render({ values: { ingress: { enabled: false } } });
    expect(grants(ms)).toEqual(needed([RELEASE_NS], true, false));
    expect(grants(ms).filter((g) => g.includes('networking.k8s.io/ingress'))).toEqual([]);
    expect(ms.filter((m) => m.kind.startsWith('Cluster')).map((m) => `${m.kind}/${m.metadata.name}`)).toEqual(
      ['ClusterRole/gw-sluice-sluice-gateway-api', 'ClusterRoleBinding/gw-sluice-sluice-gateway-api'],
    );
    const args = controllerArgs(ms);
    expect(args.slice(args.indexOf('--ingress'), args.indexOf('--ingress') + 2)).toEqual([
      '--ingress',
      'off',
    ]);
    expect(args).not.toContain('--publish-service');
  });

  it("by default the controller serves the class sluice and publishes the proxy Service as the Ingresses' address", async () => {
    const args = controllerArgs(await render());
    expect(args.slice(args.indexOf('--ingress-class'), args.indexOf('--ingress-class') + 2)).toEqual([
      '--ingress-class',
      'sluice',
    ]);
    expect(args.slice(args.indexOf('--publish-service'), args.indexOf('--publish-service') + 2)).toEqual([
      '--publish-service',
      'sluice/gw-sluice',
    ]);
    expect(args).not.toContain('--ingress');
  });

  it('watchNamespaces [shop, payments]: Roles in those two for routes, plugins, Secrets, Services; Lease and EndpointSlices in the release namespace', async () => {
    const ms = await render({ values: { watchNamespaces: ['shop', 'payments'] } });
    expect(grants(ms)).toEqual(needed(['shop', 'payments']));
    expect(
      grants(ms).filter(
        (g) =>
          g.startsWith('* ') &&
          !/gatewayclasses|ingressclasses|customresourcedefinitions|\/namespaces /.test(g),
      ),
    ).toEqual([]);
    const secrets = grants(ms).filter((g) => g.includes('/secrets '));
    expect(secrets).toEqual([
      'payments /secrets list',
      'payments /secrets watch',
      'shop /secrets list',
      'shop /secrets watch',
    ]);
  });

  it('watchNamespaces []: a ClusterRole for the watched kinds (and only those), the rest still namespaced', async () => {
    const ms = await render({ values: { watchNamespaces: [] } });
    expect(grants(ms)).toEqual(needed([]));
    const cluster = grants(ms).filter((g) => g.startsWith('* '));
    // The Lease stays in the release namespace; EndpointSlices are read everywhere (the back ends
    // of the Services routes name), and only read.
    expect(cluster.every((g) => !/leases/.test(g))).toBe(true);
    expect(cluster.filter((g) => /endpointslices/.test(g))).toEqual([
      '* discovery.k8s.io/endpointslices list',
      '* discovery.k8s.io/endpointslices watch',
    ]);
  });

  it('no "*" anywhere, no write verbs on anything but status, events, the Lease and (Gateways\' own) Services, in every preset', async () => {
    for (const preset of PRESETS) {
      const ms = await render({ files: [preset] });
      for (const role of ms.filter((m) => m.kind === 'Role' || m.kind === 'ClusterRole'))
        for (const r of role.rules as Rule[]) {
          expect([...r.apiGroups, ...r.resources, ...r.verbs]).not.toContain('*');
          const writes = r.verbs.filter((v) => !['get', 'list', 'watch'].includes(v));
          if (writes.length)
            expect(
              r.resources.every((x) => /\/status$|^events$|^leases$|^services$/.test(x)),
              JSON.stringify(r),
            ).toBe(true);
        }
    }
  });

  it('standalone mode: no RBAC at all; no ServiceAccount of the chart has a binding', async () => {
    const ms = await render({ files: [PRESETS[0]] });
    expect(ms.filter((m) => /Role/.test(m.kind))).toEqual([]);
  });
});

/** The controller container's args, as rendered. */
function controllerArgs(ms: Manifest[]): string[] {
  const d = ms.find((m) => m.kind === 'Deployment' && m.metadata.name.endsWith('-controller'));
  return (d as unknown as { spec: { template: { spec: { containers: { args: string[] }[] } } } }).spec
    .template.spec.containers[0].args;
}
