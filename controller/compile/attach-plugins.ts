/**
 * Pass 4: each draft gets its plugin instances: the service-scope plugins (spec.plugins), then
 * the route-scope ones (routes[].plugins), then a version's (versions[].plugins). A narrower scope's
 * plugin replaces every wider-scope plugin of the same type (a route can loosen or tighten a service-wide rate limit). A
 * GatewayPlugin named twice runs once. The data plane orders the instances by phase.
 */
import type { PluginInstance } from '../../dataplane/config/route-table.ts';
import type { PluginRef } from '../api/common.ts';
import { keyOf } from '../source/resource-set.ts';
import type { Diagnostic } from '../validate/diagnostic.ts';
import type { ModelPlugin } from '../validate/model.ts';
import { type Draft, type Pass, rejectObjects } from './draft.ts';

export const attachPlugins: Pass = (state) => {
  const errors: Diagnostic[] = [];
  const drafts: Draft[] = [];
  // Optimization: one list per distinct (namespace, references), shared by every draft that has
  // them, and one instance per GatewayPlugin: thousands of routes naming the same plugins made
  // as many Sets, arrays and instances (~30 MB per build of 5,000 GatewayRoutes).
  const lists = new Map<string, PluginInstance[]>();
  const instances = new Map<ModelPlugin, PluginInstance>();
  const instance = (p: ModelPlugin) => {
    let i = instances.get(p);
    if (i === undefined) {
      i = instanceOf(p);
      instances.set(p, i);
    }
    return i;
  };
  for (const d of state.drafts) {
    const ns = d.route.ref.namespace;
    const routeRefs = d.route.spec.routes[d.ruleIndex].plugins;
    const v = d.version;
    const key = `${ns}\n${names(d.route.spec.plugins)}\n${names(routeRefs)}\n${names(v?.plugins)}`;
    let plugins = lists.get(key);
    if (plugins === undefined) {
      const found: Diagnostic[] = [];
      const lookup = (refs: PluginRef[] | undefined, at: string): ModelPlugin[] =>
        (refs ?? []).flatMap((r, i) => {
          const p = state.model.plugins.get(keyOf(ns, r.name));
          // validate/ leaves out routes with unresolved references; this keeps the promise even if it did not.
          if (!p) found.push(notFound(d, `${at}[${i}].name`, `${ns}/${r.name}`));
          return p ? [p] : [];
        });
      const serviceScope = lookup(d.route.spec.plugins, 'spec.plugins');
      const routeScope = lookup(routeRefs, `spec.routes[${d.ruleIndex}].plugins`);
      const versionScope = v ? lookup(v.plugins, `spec.versions[${v.index}].plugins`) : [];
      const byVersion = new Set(versionScope.map((p) => p.plugin));
      const overridden = new Set([...routeScope.map((p) => p.plugin), ...byVersion]);
      const chosen = [
        ...serviceScope.filter((p) => !overridden.has(p.plugin)),
        ...routeScope.filter((p) => !byVersion.has(p.plugin)),
        ...versionScope,
      ].map(instance);
      plugins = chosen.filter((p, i) => chosen.indexOf(p) === i);
      // A list with a reference not found is not shared: its diagnostics name this route's fields.
      if (found.length) errors.push(...found);
      else lists.set(key, plugins);
    }
    drafts.push({ ...d, plugins });
  }
  return rejectObjects({ ...state, drafts }, errors);
};

/** The names a scope references, in order ("" for none). */
function names(refs: PluginRef[] | undefined): string {
  return refs === undefined ? '' : refs.map((r) => r.name).join('\n');
}

function instanceOf(p: ModelPlugin): PluginInstance {
  return {
    config: p.config,
    id: `plugin/${p.ref.namespace}/${p.ref.name}`,
    name: p.plugin,
    source: p.source,
  };
}

function notFound(d: Draft, field: string, name: string): Diagnostic {
  return {
    object: d.route.ref,
    field,
    condition: 'ResolvedRefs',
    reason: 'PluginNotFound',
    message: `GatewayPlugin ${name} not found`,
  };
}
