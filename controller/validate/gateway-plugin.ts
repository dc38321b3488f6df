/**
 * A GatewayPlugin is accepted when its spec fits GatewayPluginSpec (the plugin's field typed by
 * its manifest's schema, the same one the data plane checks at the door), the union's rules
 * hold (the API server's CEL, UNION_RULES, said again here for objects it never saw: standalone
 * files, or objects stored before the CRD checked them), and the manifest's checks across fields
 * pass. The deprecated untyped `config` is checked against the same schema.
 */
import { type TSchema, Type } from '@sinclair/typebox';
import type { TypeCheck } from '@sinclair/typebox/compiler';
import {
  CONFIG_BESIDE_TYPED,
  type GatewayPlugin,
  GatewayPluginSpec,
  onlyWith,
  PLUGIN_FIELDS,
  pluginConfigOf,
  requiredWith,
} from '../api/gateway-plugin.ts';
import { PLUGIN_MANIFESTS } from '../../dataplane/config/catalog.ts';
import type { ConfigProblem } from '../../dataplane/config/config-problem.ts';
import { refOf } from '../source/resource-set.ts';
import { type Diagnostic, invalid } from './diagnostic.ts';
import { checkMetadata } from './metadata.ts';
import type { ModelPlugin } from './model.ts';
import { compileSchema, schemaErrors } from './schema-errors.ts';

// The spec's shape with every config field as "an object": each plugin's schema is compiled once
// (below) and checks the one field its plugin reads. (GatewayPluginSpec.config is a Type.Unsafe,
// for the CRD's x-kubernetes-preserve-unknown-fields, which TypeCompiler cannot compile anyway.)
const AnObject = Type.Optional(Type.Record(Type.String(), Type.Unknown()));
const checkSpec = compileSchema(
  Type.Object(
    {
      plugin: GatewayPluginSpec.properties.plugin,
      ...Object.fromEntries(PLUGIN_FIELDS.map((f) => [f.field, AnObject])),
      config: AnObject,
    },
    { additionalProperties: false },
  ),
);
const checkConfig = new Map<string, { schema: TypeCheck<TSchema>; checks?: (c: unknown) => ConfigProblem[] }>(
  PLUGIN_MANIFESTS.map((m) => [
    m.name,
    {
      schema: compileSchema<TSchema>(m.schema),
      checks: m.checks as ((c: unknown) => ConfigProblem[]) | undefined,
    },
  ]),
);

/** What a plugin's config breaks of its manifest's schema, then of its checks (fields relative to the config). */
export function pluginConfigProblems(plugin: string, config: unknown): ConfigProblem[] {
  const { schema, checks } = checkConfig.get(plugin)!;
  const errors = schemaErrors(schema, config, []);
  if (errors.length) return errors;
  return checks?.(config) ?? [];
}

export function validatePlugin(obj: GatewayPlugin): { plugin?: ModelPlugin; diagnostics: Diagnostic[] } {
  const ref = refOf(obj);
  const { meta, diagnostics } = checkMetadata(ref, obj.metadata);
  const spec: unknown = obj.spec;
  if (spec === undefined) return { diagnostics: [...diagnostics, invalid(ref, 'spec', 'required')] };
  const specErrors = schemaErrors(checkSpec, spec, ['spec']);
  diagnostics.push(...specErrors.map((e) => invalid(ref, e.field, e.message)));
  if (specErrors.length) return { diagnostics };
  const s = spec as GatewayPlugin['spec'] & Record<string, unknown>;
  const { plugin } = s;
  for (const f of PLUGIN_FIELDS) {
    if (f.plugin !== plugin && s[f.field] !== undefined)
      diagnostics.push(invalid(ref, `spec.${f.field}`, onlyWith(f.plugin)));
    else if (f.plugin === plugin && s[f.field] !== undefined && s.config !== undefined)
      diagnostics.push(invalid(ref, 'spec.config', CONFIG_BESIDE_TYPED));
    else if (f.plugin === plugin && s[f.field] === undefined && s.config === undefined && f.required)
      diagnostics.push(invalid(ref, `spec.${f.field}`, requiredWith(f.plugin)));
  }
  if (diagnostics.length) return { diagnostics };

  const { field, config = {} } = pluginConfigOf(s);
  const at = `spec.${field}`;
  const { schema } = checkConfig.get(plugin)!;
  const configErrors = schemaErrors(schema, config, ['spec', field]);
  diagnostics.push(...configErrors.map((e) => invalid(ref, e.field, sayFor(plugin, at)(e.message))));
  if (!configErrors.length) diagnostics.push(...checkResolved({ ref, plugin, field: at, config }));
  if (diagnostics.length) return { diagnostics };
  // A copy: the table must not share objects with the informer cache (or a file loader) it came from.
  return {
    plugin: { ref, source: meta.source, plugin, field: at, config: structuredClone(config) },
    diagnostics,
  };
}

/**
 * The manifest's checks across fields, on the config as it stands: run once on the spec, and
 * again once its Secrets are resolved (validate/index.ts), as the data plane's door runs them on
 * the table. Checks of a Secret's value (a cookie key's length, a PEM that parses) find it only
 * then: so a value the data plane would refuse is refused here, on the GatewayPlugin, and
 * never reaches a pod (where it would refuse the whole snapshot).
 */
export function checkResolved(p: Pick<ModelPlugin, 'ref' | 'plugin' | 'field' | 'config'>): Diagnostic[] {
  const say = sayFor(p.plugin, p.field);
  return (checkConfig.get(p.plugin)!.checks?.(p.config) ?? []).map((e) =>
    invalid(p.ref, e.field ? `${p.field}.${e.field}` : p.field, say(e.message)),
  );
}

/** The typed field names its plugin; the deprecated `config` does not, so its messages do. */
const sayFor = (plugin: string, at: string) =>
  at === 'spec.config' ? (m: string) => `${plugin}: ${m}` : (m: string) => m;
