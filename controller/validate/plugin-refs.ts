/**
 * ResolvedRefs: every GatewayPlugin a GatewayRoute names must exist in its namespace and be
 * accepted. A route with an unresolved reference is left out of the model entirely: a route
 * whose plugin is missing must never run without it (ARCHITECTURE §8.3).
 */
import { keyOf, type ObjectRef } from '../source/resource-set.ts';
import type { Diagnostic } from './diagnostic.ts';

export interface PluginRefSite {
  field: string;
  name: string;
}

/**
 * The plugin references in a spec, read defensively: this also runs on specs that failed the
 * schema, so that a user sees a missing plugin at the same time as a typo elsewhere.
 */
export function pluginRefsOf(spec: unknown): PluginRefSite[] {
  const sites: PluginRefSite[] = [];
  const collect = (list: unknown, at: string) => {
    if (!Array.isArray(list)) return;
    list.forEach((r, i) => {
      const name = (r as { name?: unknown } | null)?.name;
      if (typeof name === 'string') sites.push({ field: `${at}[${i}].name`, name });
    });
  };
  const s = spec as { plugins?: unknown; routes?: unknown; versions?: unknown } | null | undefined;
  collect(s?.plugins, 'spec.plugins');
  const versions: unknown[] = Array.isArray(s?.versions) ? s.versions : [];
  versions.forEach((v, i) => {
    collect((v as { plugins?: unknown } | null)?.plugins, `spec.versions[${i}].plugins`);
  });
  const routes: unknown[] = Array.isArray(s?.routes) ? s.routes : [];
  routes.forEach((r, i) => {
    collect((r as { plugins?: unknown } | null)?.plugins, `spec.routes[${i}].plugins`);
  });
  return sites;
}

/** What is known of a GatewayPlugin: accepted, or the first reason it is not. */
export type PluginState = { accepted: true } | { accepted: false; why: string };

/** ResolvedRefs diagnostics for the references in spec; plugins is keyed by "namespace/name". */
export function checkPluginRefs(
  ref: ObjectRef,
  spec: unknown,
  plugins: ReadonlyMap<string, PluginState>,
): Diagnostic[] {
  const out: Diagnostic[] = [];
  for (const site of pluginRefsOf(spec)) {
    const state = plugins.get(keyOf(ref.namespace, site.name));
    const base = { object: ref, field: site.field, condition: 'ResolvedRefs' as const };
    if (state === undefined)
      out.push({
        ...base,
        reason: 'PluginNotFound',
        message: `GatewayPlugin ${ref.namespace}/${site.name} not found`,
      });
    else if (!state.accepted)
      out.push({
        ...base,
        reason: 'PluginInvalid',
        message: `GatewayPlugin ${ref.namespace}/${site.name} is not accepted: ${state.why}`,
      });
  }
  return out;
}
