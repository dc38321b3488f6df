/**
 * Which informer events can change the snapshot, and which objects build() reads. Pure.
 * Not relevant: a GatewayRoute or GatewayPlugin update that leaves its generation and labels
 * alone (our own status writes), Secrets no plugin or route spec.tls references and Services no route sends
 * traffic to.
 */
import { SERVICE_NAME_LABEL } from '../api/endpoint-slice.ts';
import type { EndpointSlice, GatewayPlugin, GatewayRoute, Resource, Secret, Service } from '../api/index.ts';
import type { ChangeType, KubeObject } from './informers.ts';
import { backendRefsOf } from '../api/gateway-route.ts';
import { mirrorBackendRefs } from '../gateway-api/mirrors.ts';
import type { Gateway, GRPCRoute, HTTPRoute } from '../api/gateway-api.ts';
import { frontendCaRefs } from '../gateway-api/frontend-tls.ts';
import { gatewayServiceName } from '../gateway-api/gateways.ts';

/** A GatewayRoute or GatewayPlugin event that can change the table: added, deleted, or a new generation or labels. */
export function specChanged(type: ChangeType, obj: KubeObject, old?: KubeObject): boolean {
  return (
    type !== 'modified' ||
    old?.metadata.generation !== obj.metadata.generation ||
    JSON.stringify(old?.metadata.labels) !== JSON.stringify(obj.metadata.labels)
  );
}

/** "namespace/name" of the Secrets and Services the current GatewayPlugins and GatewayRoutes name. */
export interface References {
  secrets: ReadonlySet<string>;
  services: ReadonlySet<string>;
}

export const NO_REFERENCES: References = { secrets: new Set(), services: new Set() };

export function referencesOf(plugins: Iterable<GatewayPlugin>, routes: Iterable<GatewayRoute>): References {
  const list = [...routes];
  const secrets = referencedSecrets(plugins);
  for (const s of tlsSecrets(list)) secrets.add(s);
  return { secrets, services: referencedServices(list) };
}

/** Whether a Secret or Service is in a set of references ("namespace/name"). */
export function isReferenced(refs: ReadonlySet<string>, obj: KubeObject): boolean {
  return refs.has(`${obj.metadata.namespace}/${obj.metadata.name}`);
}

/** Whether an EndpointSlice belongs to a Service in a set of references ("namespace/name"). */
export function isReferencedSlice(refs: ReadonlySet<string>, slice: KubeObject): boolean {
  const service = slice.metadata.labels?.[SERVICE_NAME_LABEL];
  return service !== undefined && refs.has(`${slice.metadata.namespace}/${service}`);
}

/** What build() reads: every GatewayPlugin and GatewayRoute, and only the referenced Secrets and Services (and their EndpointSlices). */
export function relevantObjects(
  all: {
    plugins: Iterable<GatewayPlugin>;
    routes: Iterable<GatewayRoute>;
    secrets: Iterable<Secret & KubeObject>;
    services: Iterable<Service & KubeObject>;
    endpointSlices?: Iterable<EndpointSlice & KubeObject>;
  },
  refs: References,
): Resource[] {
  const objects: Resource[] = [...all.plugins, ...all.routes];
  for (const s of all.secrets) if (isReferenced(refs.secrets, s)) objects.push(s);
  for (const s of all.services) if (isReferenced(refs.services, s)) objects.push(s);
  for (const s of all.endpointSlices ?? []) if (isReferencedSlice(refs.services, s)) objects.push(s);
  return objects;
}

/** "namespace/name" of every Secret a GatewayPlugin's config names through a secretKeyRef. */
export function referencedSecrets(plugins: Iterable<GatewayPlugin>): Set<string> {
  const out = new Set<string>();
  const walk = (ns: string, v: unknown): void => {
    if (Array.isArray(v)) for (const x of v) walk(ns, x);
    else if (v !== null && typeof v === 'object') {
      for (const [k, x] of Object.entries(v)) {
        if (k === 'secretKeyRef' && x && typeof (x as { name?: unknown }).name === 'string')
          out.add(`${ns}/${(x as { name: string }).name}`);
        else walk(ns, x);
      }
    }
  };
  // The whole spec: the config is in the field named after the plugin, or the deprecated `config`.
  for (const p of plugins) walk(p.metadata.namespace ?? 'default', p.spec);
  return out;
}

/** "namespace/name" of every Secret a GatewayRoute's spec.tls names. */
export function tlsSecrets(routes: Iterable<GatewayRoute>): Set<string> {
  const out = new Set<string>();
  for (const r of routes) {
    const tls = (r.spec as { tls?: unknown } | undefined)?.tls;
    if (!Array.isArray(tls)) continue;
    for (const t of tls) {
      const name = (t as { secretName?: unknown } | null)?.secretName;
      if (typeof name === 'string') out.add(`${r.metadata.namespace ?? 'default'}/${name}`);
    }
  }
  return out;
}

/** "namespace/name" of every Service a GatewayRoute sends traffic to (service.backendRef, its versions'). */
export function referencedServices(routes: Iterable<GatewayRoute>): Set<string> {
  const out = new Set<string>();
  for (const r of routes)
    for (const { name } of backendRefsOf(r.spec)) out.add(`${r.metadata.namespace ?? 'default'}/${name}`);
  return out;
}

/**
 * What Gateway API objects name: the Secrets of Gateways' certificateRefs, the Services of
 * HTTPRoutes' backendRefs and RequestMirror backendRefs (in their namespaces, granted or not:
 * the grant is checked by build),
 * and each Gateway's own Service (where its ports are kept, and its address read).
 */
export function gatewayApiReferences(
  gateways: Iterable<Gateway>,
  routes: Iterable<HTTPRoute | GRPCRoute>,
): References {
  const list = [...gateways];
  // Secrets holding a client CA bundle (spec.tls.frontend), beside the listeners' certificates.
  const secrets = frontendCaRefs(list).secrets;
  const services = new Set<string>();
  for (const g of list) {
    const ns = g.metadata.namespace ?? 'default';
    services.add(`${ns}/${gatewayServiceName(g.metadata.name)}`);
    for (const l of g.spec?.listeners ?? [])
      for (const ref of l.tls?.certificateRefs ?? [])
        if ((ref.kind ?? 'Secret') === 'Secret' && (ref.group ?? '') === '')
          secrets.add(`${ref.namespace ?? ns}/${ref.name}`);
  }
  for (const r of routes) {
    const ns = r.metadata.namespace ?? 'default';
    for (const rule of r.spec?.rules ?? [])
      for (const b of [...(rule.backendRefs ?? []), ...mirrorBackendRefs(rule)])
        if ((b.kind ?? 'Service') === 'Service' && (b.group ?? '') === '')
          services.add(`${b.namespace ?? ns}/${b.name}`);
  }
  return { secrets, services };
}
