/**
 * Data-plane pods from the EndpointSlices of the data plane's headless admin Service. Pure.
 * Not-ready pods are included (a pod only becomes ready once it has a config); terminating
 * ones are not. The port is the one named `portName` (default "admin"), else the first.
 */
import type { EndpointSlice } from '../api/endpoint-slice.ts';
import type { PodEndpoint } from './publisher.ts';

export type { EndpointSlice } from '../api/endpoint-slice.ts';

export interface DiscoveryOptions {
  portName?: string;
  scheme?: 'http' | 'https';
}

/** The API path that lists (and watches) the EndpointSlices of a Service. */
export function endpointSlicesPath(namespace: string, service: string): string {
  const selector = encodeURIComponent(`kubernetes.io/service-name=${service}`);
  return `/apis/discovery.k8s.io/v1/namespaces/${namespace}/endpointslices?labelSelector=${selector}`;
}

/**
 * A malformed slice (no port, a port out of range, no address) adds nothing; a pod listed by two
 * slices (as during a slice's replacement) is listed once.
 */
export function podEndpoints(slices: Iterable<EndpointSlice>, o: DiscoveryOptions = {}): PodEndpoint[] {
  const out = new Map<string, PodEndpoint>();
  const scheme = o.scheme ?? 'http';
  const portName = o.portName ?? 'admin';
  for (const slice of slices) {
    const ports = slice.ports ?? [];
    const port = (ports.find((p) => p.name === portName) ?? ports[0])?.port;
    if (port === undefined || !Number.isInteger(port) || port < 1 || port > 65_535) continue;
    for (const e of slice.endpoints ?? []) {
      const address = e.addresses?.[0];
      if (typeof address !== 'string' || address === '' || e.conditions?.terminating) continue;
      const host = address.includes(':') ? `[${address}]` : address;
      const key = `${host}:${port}`;
      if (!out.has(key))
        out.set(key, { key, name: e.targetRef?.name ?? key, url: `${scheme}://${host}:${port}` });
    }
  }
  return [...out.values()];
}
