/**
 * Where a backendRef's traffic goes in a cluster: the ready endpoints of the Service's
 * EndpointSlices on the port that backs the Service port it names, by the URL resolveBackend
 * gives that backendRef (the upstream's name: Host header, TLS server name, id). Pure.
 *
 * - The Service port's name picks the slices' port (Kubernetes names a slice's ports after the
 *   Service's; an unnamed port is '' or absent on both sides).
 * - An endpoint counts when `ready` is not false (absent means ready), once per address and
 *   port across slices, its first address only (the API says addresses are fungible); FQDN
 *   slices are left out: the data plane connects to addresses.
 * - A Service with no EndpointSlice at all (ExternalName, or no endpoints controller) has no
 *   entry: its traffic goes to the cluster DNS name as before. Slices with no ready endpoint give
 *   an empty list: the data plane answers 503 until one is ready.
 * In standalone mode (no Services known) nothing is resolved.
 */
import type { EndpointSlice } from '../api/endpoint-slice.ts';
import { backendRefsOf, type GatewayRoute } from '../api/gateway-route.ts';
import { keyOf, type ObjectRef, type ResourceSet } from '../source/resource-set.ts';
import { serviceUrl } from './service-url.ts';

export interface Endpoint {
  address: string;
  port: number;
}

/** By backend URL; empty when Services are not known or no backendRef has slices. */
export function resolveEndpoints(
  ref: ObjectRef,
  spec: GatewayRoute['spec'] | undefined,
  set: ResourceSet,
): ReadonlyMap<string, readonly Endpoint[]> {
  const out = new Map<string, readonly Endpoint[]>();
  if (set.services === null || set.endpointSlices === null) return out;
  for (const site of backendRefsOf(spec)) {
    if (typeof site.port !== 'number') continue;
    const key = keyOf(ref.namespace, site.name);
    const servicePort = set.services.get(key)?.spec?.ports?.find((p) => p.port === site.port);
    const slices = set.endpointSlices.get(key);
    // checkBackendRef reports a missing Service or port; no slices: the cluster DNS name.
    if (servicePort === undefined || slices === undefined) continue;
    const scheme = site.scheme === 'https' ? 'https' : 'http';
    out.set(
      serviceUrl(ref.namespace, site.name, site.port, scheme),
      readyEndpoints(slices, servicePort.name ?? ''),
    );
  }
  return out;
}

/** The ready endpoints of slices on the port named `portName`, unique, in address then port order. */
export function readyEndpoints(slices: readonly EndpointSlice[], portName: string): Endpoint[] {
  const found = new Map<string, Endpoint>();
  for (const slice of slices) {
    if (slice.addressType === 'FQDN') continue;
    const port = (slice.ports ?? []).find((p) => (p.name ?? '') === portName)?.port;
    if (port === undefined || !Number.isInteger(port) || port < 1 || port > 65_535) continue;
    for (const e of slice.endpoints ?? []) {
      const address = e.addresses?.[0];
      if (typeof address !== 'string' || address === '' || e.conditions?.ready === false) continue;
      found.set(`${address} ${port}`, { address, port });
    }
  }
  return [...found.values()].sort((a, b) =>
    a.address < b.address ? -1 : a.address > b.address ? 1 : a.port - b.port,
  );
}
