/**
 * Every Kubernetes API call the controller makes, declared once: which resource, which verbs,
 * in which namespaces, and why. The informers' paths are derived from it, Kube refuses any
 * call it does not declare (so the list cannot fall behind the code), and the chart's RBAC is
 * tested against it (test/chart/rbac.test.ts): least privilege is checked, not hoped for.
 */

export type Verb = 'get' | 'list' | 'watch' | 'create' | 'update' | 'patch' | 'delete';

/**
 * Where the access is needed: the namespaces given by --watch-namespaces (all when none are
 * given), the Lease's namespace, or the data plane's (its headless admin Service's) namespace.
 */
export type Scope = 'watched namespaces' | 'lease namespace' | 'dataplane namespace' | 'cluster';

export interface ApiAccess {
  /** '' for the core API group. */
  group: string;
  version: string;
  /** Plural resource, with its subresource: "gatewayroutes/status". */
  resource: string;
  verbs: readonly Verb[];
  scope: Scope;
  why: string;
  /**
   * Needed only while serving the Gateway API (--gateway-api, the chart's gatewayAPI.enabled), or
   * Ingresses (--ingress, on by default; the chart always grants it).
   */
  feature?: 'gateway-api' | 'ingress';
}

export const API_ACCESS = [
  {
    group: 'sluice.dev',
    version: 'v1alpha1',
    resource: 'gatewayroutes',
    verbs: ['list', 'watch'],
    scope: 'watched namespaces',
    why: 'the routes the snapshot is built from',
  },
  {
    group: 'sluice.dev',
    version: 'v1alpha1',
    resource: 'gatewayplugins',
    verbs: ['list', 'watch'],
    scope: 'watched namespaces',
    why: 'the plugin instances routes attach',
  },
  {
    group: 'sluice.dev',
    version: 'v1alpha1',
    resource: 'gatewayroutes/status',
    verbs: ['patch'],
    scope: 'watched namespaces',
    why: 'the Accepted, ResolvedRefs and Programmed conditions (leader only)',
  },
  {
    group: 'sluice.dev',
    version: 'v1alpha1',
    resource: 'gatewayplugins/status',
    verbs: ['patch'],
    scope: 'watched namespaces',
    why: 'the conditions of plugin instances (leader only)',
  },
  {
    group: '',
    version: 'v1',
    resource: 'secrets',
    verbs: ['list', 'watch'],
    scope: 'watched namespaces',
    why: 'values plugins reference with secretKeyRef (only referenced ones reach the snapshot)',
  },
  {
    group: '',
    version: 'v1',
    resource: 'services',
    verbs: ['list', 'watch'],
    scope: 'watched namespaces',
    why: 'the backendRefs of routes: cluster DNS name and port',
  },
  {
    group: 'discovery.k8s.io',
    version: 'v1',
    resource: 'endpointslices',
    verbs: ['list', 'watch'],
    scope: 'watched namespaces',
    why: 'the ready endpoints of the Services routes send traffic to (the data plane balances over them)',
  },
  {
    group: '',
    version: 'v1',
    resource: 'events',
    verbs: ['create', 'patch'],
    scope: 'watched namespaces',
    why: 'an Event on a route or plugin when a condition changes; the same Event again raises its count (leader only)',
  },
  {
    group: 'discovery.k8s.io',
    version: 'v1',
    resource: 'endpointslices',
    verbs: ['list', 'watch'],
    scope: 'dataplane namespace',
    why: 'the data-plane pods, from the EndpointSlices of the headless admin Service',
  },
  {
    group: 'apiextensions.k8s.io',
    version: 'v1',
    resource: 'customresourcedefinitions',
    verbs: ['list', 'watch'],
    scope: 'cluster',
    why: 'whether the Gateway API CRDs are installed: it serves them from the moment they are',
    feature: 'gateway-api',
  },
  {
    group: '',
    version: 'v1',
    resource: 'configmaps',
    verbs: ['list', 'watch'],
    scope: 'watched namespaces',
    why: "the CA bundles (ca.crt) a Gateway's spec.tls.frontend validates client certificates with, and the Service parameters GatewayClasses and Gateways name (parametersRef): watched, so a rotated CA or a changed parameter is served without a poll (per-name gets would need the names in the Role, unknown at install)",
    feature: 'gateway-api',
  },
  {
    group: 'gateway.networking.k8s.io',
    version: 'v1',
    resource: 'gatewayclasses',
    verbs: ['list', 'watch'],
    scope: 'cluster',
    why: 'the GatewayClasses whose controllerName this installation serves (sluice.dev/gateway-controller)',
    feature: 'gateway-api',
  },
  {
    group: 'gateway.networking.k8s.io',
    version: 'v1',
    resource: 'gatewayclasses/status',
    verbs: ['patch'],
    scope: 'cluster',
    why: 'Accepted and SupportedVersion of those classes (leader only)',
    feature: 'gateway-api',
  },
  {
    group: '',
    version: 'v1',
    resource: 'namespaces',
    verbs: ['list', 'watch'],
    scope: 'cluster',
    why: 'the labels of namespaces, for listeners whose allowedRoutes select namespaces by label',
    feature: 'gateway-api',
  },
  {
    group: 'gateway.networking.k8s.io',
    version: 'v1',
    resource: 'gateways',
    verbs: ['list', 'watch'],
    scope: 'watched namespaces',
    why: 'the Gateways of those classes: their listeners become data-plane ports',
    feature: 'gateway-api',
  },
  {
    group: 'gateway.networking.k8s.io',
    version: 'v1',
    resource: 'httproutes',
    verbs: ['list', 'watch'],
    scope: 'watched namespaces',
    why: 'the HTTPRoutes attached to those Gateways, compiled with the GatewayRoutes',
    feature: 'gateway-api',
  },
  {
    group: 'gateway.networking.k8s.io',
    version: 'v1',
    resource: 'grpcroutes',
    verbs: ['list', 'watch'],
    scope: 'watched namespaces',
    why: 'the GRPCRoutes attached to those Gateways, compiled with the rest',
    feature: 'gateway-api',
  },
  {
    group: 'gateway.networking.k8s.io',
    version: 'v1',
    resource: 'grpcroutes/status',
    verbs: ['update'],
    scope: 'watched namespaces',
    why: "the GRPCRoutes' status.parents entries of Sluice's Gateways, others' kept (leader only)",
    feature: 'gateway-api',
  },
  {
    group: 'gateway.networking.k8s.io',
    version: 'v1beta1',
    resource: 'referencegrants',
    verbs: ['list', 'watch'],
    scope: 'watched namespaces',
    why: 'which cross-namespace backendRefs and certificateRefs are allowed',
    feature: 'gateway-api',
  },
  {
    group: 'gateway.networking.k8s.io',
    version: 'v1',
    resource: 'gateways/status',
    verbs: ['patch'],
    scope: 'watched namespaces',
    why: "the Gateways' conditions, listeners and addresses (leader only)",
    feature: 'gateway-api',
  },
  {
    group: 'gateway.networking.k8s.io',
    version: 'v1',
    resource: 'httproutes/status',
    verbs: ['update'],
    scope: 'watched namespaces',
    why: "the HTTPRoutes' status.parents entries of Sluice's Gateways, others' kept (update with resourceVersion; leader only)",
    feature: 'gateway-api',
  },
  {
    group: '',
    version: 'v1',
    resource: 'services',
    verbs: ['create', 'update', 'delete'],
    scope: 'watched namespaces',
    why: "each Gateway's own Service (its address), owned by the Gateway, labelled with its name (leader only)",
    feature: 'gateway-api',
  },
  {
    group: 'networking.k8s.io',
    version: 'v1',
    resource: 'ingresses',
    verbs: ['list', 'watch'],
    scope: 'watched namespaces',
    why: "the Ingresses of Sluice's classes, compiled with the GatewayRoutes",
    feature: 'ingress',
  },
  {
    group: 'networking.k8s.io',
    version: 'v1',
    resource: 'ingresses/status',
    verbs: ['patch'],
    scope: 'watched namespaces',
    why: 'status.loadBalancer of those Ingresses: the address of --publish-service (leader only)',
    feature: 'ingress',
  },
  {
    group: 'networking.k8s.io',
    version: 'v1',
    resource: 'ingressclasses',
    verbs: ['list', 'watch'],
    scope: 'cluster',
    why: 'the IngressClasses whose controller is sluice.dev/ingress-controller, and which is the default',
    feature: 'ingress',
  },
  {
    group: '',
    version: 'v1',
    resource: 'events',
    verbs: ['create', 'patch'],
    scope: 'lease namespace',
    why: "an Event on a GatewayClass (cluster-scoped, so written in the controller's own namespace) when its Accepted condition changes (leader only)",
    feature: 'gateway-api',
  },
  {
    group: 'coordination.k8s.io',
    version: 'v1',
    resource: 'leases',
    verbs: ['get', 'create', 'update'],
    scope: 'lease namespace',
    why: 'leader election: one replica pushes and writes status, the others stand by',
  },
] as const satisfies readonly ApiAccess[];

export type DeclaredResource = (typeof API_ACCESS)[number]['resource'];

/** The declared access to a resource (throws on a resource the list does not declare). */
export function accessTo(resource: DeclaredResource): ApiAccess {
  const a = API_ACCESS.find((x) => x.resource === resource);
  if (a === undefined) throw new Error(`${resource} is not in API_ACCESS`);
  return a;
}

/** The collection path of a declared resource, in one namespace or (null) in all of them. */
export function collectionPath(resource: DeclaredResource, namespace: string | null): string {
  const a = accessTo(resource);
  const base = a.group === '' ? `/api/${a.version}` : `/apis/${a.group}/${a.version}`;
  return `${base}${namespace === null ? '' : `/namespaces/${namespace}`}/${a.resource}`;
}

export interface ApiCall {
  group: string;
  version: string;
  /** With its subresource, as in API_ACCESS. */
  resource: string;
  namespace: string | null;
  verb: Verb | string;
}

/**
 * The RBAC view of a REST call: GET on a collection is list (watch with ?watch or through
 * Kube.watch), on an object get; POST create, PUT update, PATCH patch. Null: not a resource path.
 */
export function apiCall(method: string, path: string, watch = false): ApiCall | null {
  const [p, query = ''] = path.split('?');
  const m =
    /^\/(?:api\/(v1)|apis\/([^/]+)\/([^/]+))(?:\/namespaces\/([^/]+))?\/([^/]+)(?:\/([^/]+)(?:\/([^/]+))?)?$/.exec(
      p,
    );
  if (m === null) return null;
  const [, coreVersion, group, groupVersion, namespace, plural, name, sub] = m;
  const isWatch = watch || /(^|&)watch=(true|1)(&|$)/.test(query);
  const verbs: Record<string, string> = { POST: 'create', PUT: 'update', PATCH: 'patch', DELETE: 'delete' };
  const verb =
    method === 'GET' ? (isWatch ? 'watch' : name === undefined ? 'list' : 'get') : (verbs[method] ?? method);
  return {
    group: group ?? '',
    version: coreVersion ?? groupVersion,
    resource: sub ? `${plural}/${sub}` : plural,
    namespace: namespace ?? null,
    verb,
  };
}

/** Throws unless API_ACCESS declares the call: an undeclared call would be refused by the chart's RBAC. */
export function assertDeclared(method: string, path: string, watch = false): void {
  const call = apiCall(method, path, watch);
  const declared =
    call !== null &&
    API_ACCESS.some(
      (a) =>
        a.group === call.group &&
        a.version === call.version &&
        a.resource === call.resource &&
        (a.verbs as readonly string[]).includes(call.verb),
    );
  if (!declared)
    throw new Error(
      `undeclared Kubernetes API call ${method} ${path}${watch ? ' (watch)' : ''}: ` +
        'declare it in controller/source/api-access.ts (and so in the chart RBAC)',
    );
}
