/**
 * ResourceSet: the objects one build reads, per kind, keyed by "namespace/name". It is
 * immutable, so a build can never change what the informers (or the file loader) hold, and
 * it iterates in key order, so the same objects give the same build whatever order they came in.
 * Specs are as the user wrote them: validate/ checks them, nothing here does.
 */
import { SERVICE_NAME_LABEL } from '../api/endpoint-slice.ts';
import type {
  ConfigMap,
  EndpointSlice,
  Gateway,
  GatewayClass,
  GatewayPlugin,
  GatewayRoute,
  GRPCRoute,
  HTTPRoute,
  Ingress,
  IngressClass,
  Namespace,
  ReferenceGrant,
  Resource,
  Secret,
  Service,
} from '../api/index.ts';

export type Kind = Resource['kind'];

/** Which object a diagnostic or a status belongs to. */
export interface ObjectRef {
  kind: Kind;
  namespace: string;
  name: string;
}

export interface ResourceSet {
  readonly routes: ReadonlyMap<string, GatewayRoute>;
  readonly plugins: ReadonlyMap<string, GatewayPlugin>;
  readonly secrets: ReadonlyMap<string, Secret>;
  /** The ConfigMaps Gateways name (spec.tls.frontend CA bundles). */
  readonly configMaps: ReadonlyMap<string, ConfigMap>;
  /** Services backendRefs name (in a cluster); null when Services are not known (standalone files). */
  readonly services: ReadonlyMap<string, Service> | null;
  /**
   * The EndpointSlices of those Services by the Service's "namespace/name", each list in name
   * order; null when Services are not known. A Service without slices has no entry.
   */
  readonly endpointSlices: ReadonlyMap<string, readonly EndpointSlice[]> | null;
  /** Gateway API (empty where its CRDs are not installed). GatewayClasses by name: cluster-scoped. */
  readonly gatewayClasses: ReadonlyMap<string, GatewayClass>;
  readonly gateways: ReadonlyMap<string, Gateway>;
  readonly httpRoutes: ReadonlyMap<string, HTTPRoute>;
  readonly grpcRoutes: ReadonlyMap<string, GRPCRoute>;
  readonly referenceGrants: ReadonlyMap<string, ReferenceGrant>;
  /** Namespaces by name (their labels), known where the Gateway API is served. */
  readonly namespaces: ReadonlyMap<string, Namespace>;
  /** networking.k8s.io/v1 Ingresses (all of them: controller/ingress/ picks Sluice's by class). */
  readonly ingresses: ReadonlyMap<string, Ingress>;
  /** IngressClasses by name (cluster-scoped). */
  readonly ingressClasses: ReadonlyMap<string, IngressClass>;
}

/** Where objects without metadata.namespace go, as with `kubectl apply` in the default context. */
export const DEFAULT_NAMESPACE = 'default';

export function keyOf(namespace: string, name: string): string {
  return `${namespace}/${name}`;
}

export function refOf(obj: Resource): ObjectRef {
  return { kind: obj.kind, namespace: obj.metadata.namespace ?? DEFAULT_NAMESPACE, name: obj.metadata.name };
}

/** "GatewayRoute/default/charges": the key of an object across kinds (status, file lookup). */
export function refKey(ref: ObjectRef): string {
  return `${ref.kind}/${ref.namespace}/${ref.name}`;
}

export const EMPTY_RESOURCE_SET: ResourceSet = resourceSetFrom([]);

/**
 * Builds a set from objects of any known kind; Services count only `withServices` (in a
 * cluster, where their absence means something). Objects without a namespace are placed in
 * "default"; a later object with the same kind, namespace and name replaces an earlier one,
 * as a second `kubectl apply` would.
 */
export function resourceSetFrom(
  objects: Iterable<Resource>,
  opts: { withServices?: boolean } = {},
): ResourceSet {
  const routes = new Map<string, GatewayRoute>();
  const plugins = new Map<string, GatewayPlugin>();
  const secrets = new Map<string, Secret>();
  const configMaps = new Map<string, ConfigMap>();
  const services = new Map<string, Service>();
  const slices = new Map<string, EndpointSlice>();
  const gatewayClasses = new Map<string, GatewayClass>();
  const gateways = new Map<string, Gateway>();
  const httpRoutes = new Map<string, HTTPRoute>();
  const grpcRoutes = new Map<string, GRPCRoute>();
  const referenceGrants = new Map<string, ReferenceGrant>();
  const namespaces = new Map<string, Namespace>();
  const ingresses = new Map<string, Ingress>();
  const ingressClasses = new Map<string, IngressClass>();
  for (const raw of objects) {
    if (raw.kind === 'GatewayClass' || raw.kind === 'Namespace' || raw.kind === 'IngressClass') {
      // Cluster-scoped: by name.
      if (raw.kind === 'GatewayClass') gatewayClasses.set(raw.metadata.name, raw);
      else if (raw.kind === 'IngressClass') ingressClasses.set(raw.metadata.name, raw);
      else namespaces.set(raw.metadata.name, raw);
      continue;
    }
    const obj = withNamespace(raw);
    const key = keyOf(obj.metadata.namespace ?? DEFAULT_NAMESPACE, obj.metadata.name);
    if (obj.kind === 'GatewayRoute') routes.set(key, obj);
    else if (obj.kind === 'GatewayPlugin') plugins.set(key, obj);
    else if (obj.kind === 'Secret') secrets.set(key, obj);
    else if (obj.kind === 'ConfigMap') configMaps.set(key, obj);
    else if (obj.kind === 'Service') services.set(key, obj);
    else if (obj.kind === 'EndpointSlice') slices.set(key, obj);
    else if (obj.kind === 'Gateway') gateways.set(key, obj);
    else if (obj.kind === 'HTTPRoute') httpRoutes.set(key, obj);
    else if (obj.kind === 'GRPCRoute') grpcRoutes.set(key, obj);
    else if (obj.kind === 'ReferenceGrant') referenceGrants.set(key, obj);
    else if (obj.kind === 'Ingress') ingresses.set(key, obj);
  }
  return Object.freeze({
    routes: sorted(routes),
    plugins: sorted(plugins),
    secrets: sorted(secrets),
    configMaps: sorted(configMaps),
    services: opts.withServices ? sorted(services) : null,
    endpointSlices: opts.withServices ? byService(sorted(slices)) : null,
    gatewayClasses: sorted(gatewayClasses),
    gateways: sorted(gateways),
    httpRoutes: sorted(httpRoutes),
    grpcRoutes: sorted(grpcRoutes),
    referenceGrants: sorted(referenceGrants),
    namespaces: sorted(namespaces),
    ingresses: sorted(ingresses),
    ingressClasses: sorted(ingressClasses),
  });
}

/** Every object of the set, kinds in a fixed order and each kind in key order. */
export function allObjects(set: ResourceSet): Resource[] {
  return [...set.plugins.values(), ...set.routes.values(), ...set.secrets.values()];
}

function withNamespace<T extends Resource>(obj: T): T {
  if (typeof obj.metadata.namespace === 'string') return obj;
  return { ...obj, metadata: { ...obj.metadata, namespace: DEFAULT_NAMESPACE } };
}

/** Slices (in key order) grouped by the Service their label names; a slice without one belongs to none. */
function byService(
  slices: ReadonlyMap<string, EndpointSlice>,
): ReadonlyMap<string, readonly EndpointSlice[]> {
  const out = new Map<string, EndpointSlice[]>();
  for (const slice of slices.values()) {
    const service = slice.metadata.labels?.[SERVICE_NAME_LABEL];
    if (typeof service !== 'string') continue;
    const key = keyOf(slice.metadata.namespace ?? DEFAULT_NAMESPACE, service);
    const list = out.get(key);
    if (list === undefined) out.set(key, [slice]);
    else list.push(slice);
  }
  return sorted(out);
}

// Plain code-unit order (never localeCompare): the order must not depend on the machine's locale.
function sorted<T>(map: Map<string, T>): ReadonlyMap<string, T> {
  return new Map([...map].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}
