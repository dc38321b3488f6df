/**
 * The handler kind each route rule chooses (routes[].aggregate, …; none: proxy to the service),
 * checked the way the catalog's manifest says: at most one kind per rule (the CRD's CEL rule,
 * again for files), its config's cross-field checks, the rule's methods among those the kind
 * serves, and every url/backendRef it names resolved like service.url. Each problem names its
 * field, e.g. spec.routes[2].aggregate.calls[1].path.
 */
import { handlerManifest } from '../../dataplane/config/catalog.ts';
import type { Route } from '../../dataplane/config/route-table.ts';
import { HANDLER_FIELDS, type RouteRule } from '../api/gateway-route.ts';
import type { ObjectRef } from '../source/resource-set.ts';
import { type Diagnostic, invalid } from './diagnostic.ts';
import { resolveBackend } from './service-url.ts';

/**
 * A rule's handler other than proxy: its kind, the user's config, the url each backend resolved
 * to; or (`entry`) a table entry ready as it is, calling no upstream: what an HTTPRoute rule
 * compiles to when it redirects, or answers 500 for want of a valid backend.
 */
export interface ModelHandler {
  kind: string;
  config: unknown;
  urls: string[];
  entry?: Route['handler'];
}

/** One entry per spec.routes[i]: its handler, or null (proxy to the service). */
export function validateHandlers(
  ref: ObjectRef,
  rules: readonly RouteRule[],
): { handlers: (ModelHandler | null)[]; diagnostics: Diagnostic[] } {
  const diagnostics: Diagnostic[] = [];
  const handlers = rules.map((rule, i): ModelHandler | null => {
    const at = `spec.routes[${i}]`;
    const given = HANDLER_FIELDS.filter((h) => (rule as Record<string, unknown>)[h.field] !== undefined);
    if (given.length === 0) return null;
    if (given.length > 1) {
      diagnostics.push(
        invalid(
          ref,
          at,
          `sets ${given.map((h) => h.field).join(' and ')}: at most one handler kind per route`,
        ),
      );
      return null;
    }
    const { field, kind } = given[0];
    const route = handlerManifest(kind)!.route!;
    const config = (rule as Record<string, unknown>)[field];
    const before = diagnostics.length;
    for (const p of route.checks?.(config) ?? [])
      diagnostics.push(invalid(ref, p.field ? `${at}.${field}.${p.field}` : `${at}.${field}`, p.message));
    rule.methods?.forEach((m, k) => {
      if (route.methods && !route.methods.includes(m))
        diagnostics.push(
          invalid(
            ref,
            `${at}.methods[${k}]`,
            `${m}: a route with ${field} serves ${route.methods.join(' and ')} only`,
          ),
        );
    });
    const urls: string[] = [];
    for (const site of route.backends(config)) {
      const resolved = resolveBackend(
        ref,
        site as { url?: string; backendRef?: { name: string; port: number } },
        `${at}.${field}.${site.field}`,
      );
      diagnostics.push(...resolved.diagnostics);
      if (resolved.url !== undefined) urls.push(resolved.url);
    }
    return diagnostics.length > before ? null : { kind, config, urls };
  });
  return { handlers, diagnostics };
}
