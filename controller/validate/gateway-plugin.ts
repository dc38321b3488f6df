/**
 * A GatewayPlugin is accepted when its spec fits GatewayPluginSpec and its config fits the
 * schema of its plugin (its manifest in the catalog, the same one the data plane checks at the door).
 */
import { type TSchema, Type } from '@sinclair/typebox';
import type { TypeCheck } from '@sinclair/typebox/compiler';
import { type GatewayPlugin, GatewayPluginSpec } from '../api/gateway-plugin.ts';
import { PLUGIN_MANIFESTS } from '../../dataplane/config/catalog.ts';
import type { ConfigProblem } from '../../dataplane/config/config-problem.ts';
import { refOf } from '../source/resource-set.ts';
import { type Diagnostic, invalid } from './diagnostic.ts';
import { checkMetadata } from './metadata.ts';
import type { ModelPlugin } from './model.ts';
import { compileSchema, schemaErrors } from './schema-errors.ts';

// GatewayPluginSpec.config is a Type.Unsafe (for the CRD's x-kubernetes-preserve-unknown-fields),
// which TypeCompiler cannot compile: here it is checked as "an object", then against its plugin's schema.
const checkSpec = compileSchema(
  Type.Object(
    { ...GatewayPluginSpec.properties, config: Type.Optional(Type.Record(Type.String(), Type.Unknown())) },
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

export function validatePlugin(obj: GatewayPlugin): { plugin?: ModelPlugin; diagnostics: Diagnostic[] } {
  const ref = refOf(obj);
  const { meta, diagnostics } = checkMetadata(ref, obj.metadata);
  const spec: unknown = obj.spec;
  if (spec === undefined) return { diagnostics: [...diagnostics, invalid(ref, 'spec', 'required')] };
  const specErrors = schemaErrors(checkSpec, spec, ['spec']);
  diagnostics.push(...specErrors.map((e) => invalid(ref, e.field, e.message)));
  if (specErrors.length) return { diagnostics };
  const { plugin, config = {} } = spec as GatewayPlugin['spec'];
  const configErrors = schemaErrors(checkConfig.get(plugin)!.schema, config, ['spec', 'config']);
  diagnostics.push(...configErrors.map((e) => invalid(ref, e.field, `${plugin}: ${e.message}`)));
  if (!configErrors.length)
    for (const e of checkConfig.get(plugin)!.checks?.(config) ?? [])
      diagnostics.push(
        invalid(ref, e.field ? `spec.config.${e.field}` : 'spec.config', `${plugin}: ${e.message}`),
      );
  if (diagnostics.length) return { diagnostics };
  // A copy: the table must not share objects with the informer cache (or a file loader) it came from.
  return { plugin: { ref, source: meta.source, plugin, config: structuredClone(config) }, diagnostics };
}
