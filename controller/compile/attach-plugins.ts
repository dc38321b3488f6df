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
  for (const d of state.drafts) {
    const ns = d.route.ref.namespace;
    const lookup = (refs: PluginRef[] | undefined, at: string): ModelPlugin[] =>
      (refs ?? []).flatMap((r, i) => {
        const p = state.model.plugins.get(keyOf(ns, r.name));
        // validate/ leaves out routes with unresolved references; this keeps the promise even if it did not.
        if (!p) errors.push(notFound(d, `${at}[${i}].name`, `${ns}/${r.name}`));
        return p ? [p] : [];
      });
    const serviceScope = lookup(d.route.spec.plugins, 'spec.plugins');
    const routeScope = lookup(
      d.route.spec.routes[d.ruleIndex].plugins,
      `spec.routes[${d.ruleIndex}].plugins`,
    );
    const v = d.version;
    const versionScope = v ? lookup(v.plugins, `spec.versions[${v.index}].plugins`) : [];
    const byVersion = new Set(versionScope.map((p) => p.plugin));
    const overridden = new Set([...routeScope.map((p) => p.plugin), ...byVersion]);
    const chosen = [
      ...serviceScope.filter((p) => !overridden.has(p.plugin)),
      ...routeScope.filter((p) => !byVersion.has(p.plugin)),
      ...versionScope,
    ].map(instanceOf);
    const plugins = chosen.filter((p, i) => chosen.findIndex((q) => q.id === p.id) === i);
    drafts.push({ ...d, plugins });
  }
  return rejectObjects({ ...state, drafts }, errors);
};

function instanceOf(p: ModelPlugin): PluginInstance {
  return {
    id: `plugin/${p.ref.namespace}/${p.ref.name}`,
    name: p.plugin,
    config: p.config,
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
