/**
 * validate: ResourceSet → { model, diagnostics }. Never throws on user input: each object is
 * checked on its own, a bad one becomes diagnostics on itself, and everything else goes on.
 * Plugins first, because routes are only as valid as the plugins they reference.
 */
import type { Resource } from '../api/index.ts';
import { type ResourceSet, refOf } from '../source/resource-set.ts';
import { type Diagnostic, invalid } from './diagnostic.ts';
import { checkResolved, validatePlugin } from './gateway-plugin.ts';
import { validateRoute } from './gateway-route.ts';
import type { Model, ModelPlugin, ModelRoute } from './model.ts';
import { checkBackendRef } from './backend-refs.ts';
import { resolveEndpoints } from './endpoints.ts';
import { resolveSecretRefs } from './secret-refs.ts';
import { resolveTlsRefs } from './tls-refs.ts';
import { withSortedKeys } from '../../dataplane/config/canonical-json.ts';
import { pluginManifest } from '../../dataplane/config/catalog.ts';
import { resolvedSecretField } from '../../dataplane/config/manifest.ts';
import { checkPluginRefs, type PluginState } from './plugin-refs.ts';

export interface Validated {
  model: Model;
  diagnostics: Diagnostic[];
}

export function validate(resources: ResourceSet): Validated {
  const diagnostics: Diagnostic[] = [];
  const plugins = new Map<string, ModelPlugin>();
  const states = new Map<string, PluginState>();
  for (const [key, obj] of resources.plugins) {
    const result = guarded(obj, () => validatePlugin(obj));
    if (result.plugin) {
      const as = resolvedSecretField(pluginManifest(result.plugin.plugin));
      const { config, field } = result.plugin;
      const refs = resolveSecretRefs(refOf(obj), config, resources.secrets, as, field);
      result.diagnostics.push(...(refs.length ? refs : checkResolved(result.plugin)));
    }
    if (result.diagnostics.length) result.plugin = undefined;
    diagnostics.push(...result.diagnostics);
    // Keys sorted once here (the Secrets' hashes added): every route table entry shares this config.
    if (result.plugin) plugins.set(key, { ...result.plugin, config: withSortedKeys(result.plugin.config) });
    const first = result.diagnostics[0];
    states.set(
      key,
      first ? { accepted: false, why: `${first.field}: ${first.message}` } : { accepted: true },
    );
  }

  const routes: ModelRoute[] = [];
  for (const obj of resources.routes.values()) {
    const result = guarded(obj, () => validateRoute(obj));
    const tls = result.route && resolveTlsRefs(refOf(obj), result.route.spec.tls, resources.secrets);
    const refs = [
      ...checkPluginRefs(refOf(obj), obj.spec, states),
      ...checkBackendRef(refOf(obj), obj.spec, resources),
      ...(tls?.diagnostics ?? []),
    ];
    diagnostics.push(...result.diagnostics, ...refs);
    if (result.route && tls && refs.length === 0) {
      const endpoints = resolveEndpoints(refOf(obj), obj.spec, resources);
      routes.push({ ...result.route, certificates: tls.certificates, ...(endpoints.size && { endpoints }) });
    }
  }
  return { model: { routes, plugins }, diagnostics };
}

/**
 * A bug in a check must not take the other objects down with it: it becomes this object's
 * diagnostic. (The cast is sound: every field of a check's result but diagnostics is optional.)
 */
function guarded<T extends { diagnostics: Diagnostic[] }>(obj: Resource, check: () => T): T {
  try {
    return check();
  } catch (err) {
    return { diagnostics: [invalid(refOf(obj), '(root)', `could not be validated: ${String(err)}`)] } as T;
  }
}
