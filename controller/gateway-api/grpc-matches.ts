/**
 * GRPCRoute matches as the route table's path matches: a gRPC method is the HTTP/2 path
 * /<service>/<method>, so service and method → that path, Exact; a service alone → Prefix
 * /<service> (every method of it, on the segment boundary); neither → Prefix / (every call).
 * A method without its service, and RegularExpression, have no path form: refused
 * (UnsupportedValue). Headers match exactly, as an HTTPRoute's do.
 */
import type { GRPCRouteMatch, GRPCRouteRule } from '../api/gateway-api.ts';
import type { Match } from './http-routes.ts';

/** Why the match cannot be served (its field first), or undefined. */
export function grpcMatchProblem(m: GRPCRouteMatch): string | undefined {
  if (m.method?.type === 'RegularExpression') return 'method: RegularExpression is not supported';
  if (m.method?.method !== undefined && m.method.service === undefined)
    return 'method: a method without its service is not supported';
  if (m.headers?.some((h) => h.type === 'RegularExpression'))
    return 'headers: RegularExpression is not supported';
  return undefined;
}

export function grpcMatchesOf(rule: GRPCRouteRule): Match[] {
  const matches = rule.matches?.length ? rule.matches : [{}];
  return matches.map((m) => {
    const { service, method } = m.method ?? {};
    const headers = (m.headers ?? []).map((h) => ({ name: h.name, value: h.value }));
    if (service !== undefined && method !== undefined)
      return { path: `/${service}/${method}`, pathType: 'Exact', headers };
    return { path: service !== undefined ? `/${service}` : '/', pathType: 'Prefix', headers };
  });
}
