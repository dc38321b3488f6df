/**
 * Where a GatewayRoute's traffic goes: service.url, or service.backendRef resolved to a URL.
 * Re-checks the CRD's CEL rules (exactly one of url/backendRef; url absolute http(s)), which a
 * file in standalone mode never went through, plus what the data plane refuses (query,
 * fragment, credentials). The URL is returned normalized: origin plus base path, no trailing "/".
 */
import type { GatewayRouteSpec } from '../api/gateway-route.ts';
import type { ObjectRef } from '../source/resource-set.ts';
import { type Diagnostic, invalid } from './diagnostic.ts';

type Service = GatewayRouteSpec['service'];

export function resolveServiceUrl(
  ref: ObjectRef,
  service: Service,
): { url?: string; diagnostics: Diagnostic[] } {
  return resolveBackend(ref, service, 'spec.service');
}

/** The same for any object with url or backendRef (a version, a canary backend) at `at`. */
export function resolveBackend(
  ref: ObjectRef,
  service: Pick<Service, 'url' | 'backendRef'>,
  at: string,
): { url?: string; diagnostics: Diagnostic[] } {
  if ((service.url === undefined) === (service.backendRef === undefined))
    return {
      diagnostics: [invalid(ref, `${at}.url`, 'exactly one of url or backendRef must be set')],
    };
  if (service.backendRef) {
    const { name, port, scheme } = service.backendRef;
    return { url: serviceUrl(ref.namespace, name, port, scheme), diagnostics: [] };
  }
  const parsed = parseServiceUrl(service.url!);
  if (typeof parsed === 'string') return { diagnostics: [invalid(ref, `${at}.url`, parsed)] };
  return { url: parsed.origin + parsed.pathname.replace(/\/+$/, ''), diagnostics: [] };
}

/**
 * A Service's URL: its cluster DNS name and port. It names the upstream (its Host header, TLS
 * server name and id); in a cluster the connections go to the Service's ready endpoints
 * (validate/endpoints.ts), and to this name only when the Service has no EndpointSlices.
 */
export function serviceUrl(
  namespace: string,
  name: string,
  port: number,
  scheme: 'http' | 'https' = 'http',
): string {
  return `${scheme}://${name}.${namespace}.svc:${port}`;
}

/** The parsed URL, or what is wrong with it. */
function parseServiceUrl(raw: string): URL | string {
  const shown = JSON.stringify(raw);
  // Case-sensitive, as the CEL rule is; and the URL parser would silently trim white space.
  if (!raw.startsWith('http://') && !raw.startsWith('https://'))
    return `${shown} must be an absolute http:// or https:// URL`;
  if (/\s/.test(raw) || [...raw].some((c) => c.charCodeAt(0) < 0x20 || c.charCodeAt(0) === 0x7f))
    return `${shown} must not contain white space or control characters`;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return `${shown} is not a valid URL`;
  }
  if (url.hostname === '') return `${shown} has no host`;
  if (url.username || url.password) return `${shown} must not carry credentials (use a plugin and a Secret)`;
  if (raw.includes('?')) return `${shown} must not carry a query`;
  if (raw.includes('#')) return `${shown} must not carry a fragment`;
  return url;
}
