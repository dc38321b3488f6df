/**
 * GatewayPlugin: one plugin instance and its configuration, referenced by GatewayRoutes.
 *
 * A discriminated union in the shape of Gateway API's filters: `plugin` names the plugin and the
 * field named after it (lowerCamelCase: rate-limiting → rateLimiting) holds its configuration,
 * typed by the plugin's own schema (its manifest in dataplane/config/catalog.ts, the one the
 * controller and the data plane check too). So the API server refuses a wrong value at
 * `kubectl apply`, naming the field, and `kubectl explain gatewayplugin.spec.rateLimiting` shows
 * every field. CEL rules say what a union needs: only the field of `plugin` may be set, and it
 * is required unless the plugin's defaults are a whole configuration (idempotency: `{}` is the
 * spec's contract). `config`, the untyped form of earlier versions, is still accepted (and
 * checked by the controller) but deprecated: `sluice migrate` rewrites it.
 */
import { type Static, type TSchema, Type } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { PLUGIN_MANIFESTS, PLUGIN_NAMES, type PluginName } from '../../dataplane/config/catalog.ts';
import { type ObjectMeta, Status } from './common.ts';

/** The spec field holding a plugin's configuration: its name in lowerCamelCase. */
export const configField = (plugin: string): string =>
  plugin.replace(/-([a-z0-9])/g, (_, c: string) => c.toUpperCase());

/** Each plugin's spec field, and whether it must be written (its defaults are not a valid configuration). */
export const PLUGIN_FIELDS: readonly { plugin: PluginName; field: string; required: boolean }[] =
  PLUGIN_MANIFESTS.map((m) => ({
    plugin: m.name,
    field: configField(m.name),
    // Checked on {} with the manifest's own rules, so a plugin that gains a required field
    // (or an "at least one of" check) makes its spec field required without another edit.
    required:
      !Value.Check(m.schema, {}) ||
      ((m.checks as ((c: unknown) => unknown[]) | undefined)?.({}) ?? []).length > 0,
  }));

const typedFields = Object.fromEntries(
  PLUGIN_MANIFESTS.map((m) => {
    const field = configField(m.name);
    const schema = m.schema as TSchema;
    const when = `Set with plugin: ${m.name}, and only then${
      PLUGIN_FIELDS.find((f) => f.field === field)?.required ? ' (required)' : ' (optional: {} by default)'
    }.`;
    return [
      field,
      Type.Optional({
        ...schema,
        description: `Configuration of the ${m.name} plugin. ${when} ${schema.description ?? ''}`.trim(),
      }),
    ];
  }),
);

/** Reason the API server gives a failed rule (CRD x-kubernetes-validations' `reason`). */
type RuleReason = 'FieldValueForbidden' | 'FieldValueRequired' | 'FieldValueInvalid';
export interface CelRule {
  rule: string;
  message: string;
  fieldPath?: string;
  reason?: RuleReason;
}

export function onlyWith(plugin: string): string {
  return `is the configuration of plugin ${plugin}: set it only with plugin: ${plugin}`;
}
export function requiredWith(plugin: string): string {
  return `is required with plugin: ${plugin}`;
}
export const CONFIG_BESIDE_TYPED = 'is deprecated and may not be set beside the typed field of the plugin';

const anyTyped = PLUGIN_FIELDS.map((f) => `has(self.${f.field})`).join(' || ');

/** The union's rules; the controller applies the same ones (validate/gateway-plugin.ts), with these messages. */
export const UNION_RULES: readonly CelRule[] = [
  ...PLUGIN_FIELDS.map(({ plugin, field }) => ({
    rule: `!has(self.${field}) || self.plugin == '${plugin}'`,
    message: onlyWith(plugin),
    fieldPath: `.${field}`,
    reason: 'FieldValueForbidden' as const,
  })),
  ...PLUGIN_FIELDS.filter((f) => f.required).map(({ plugin, field }) => ({
    rule: `self.plugin != '${plugin}' || has(self.${field}) || has(self.config)`,
    message: requiredWith(plugin),
    fieldPath: `.${field}`,
    reason: 'FieldValueRequired' as const,
  })),
  {
    rule: `!has(self.config) || !(${anyTyped})`,
    message: CONFIG_BESIDE_TYPED,
    fieldPath: '.config',
    reason: 'FieldValueForbidden',
  },
];

export const GatewayPluginSpec = Type.Object(
  {
    plugin: Type.Union(
      PLUGIN_NAMES.map((n) => Type.Literal(n)),
      {
        description:
          `The built-in plugin to run: one of ${PLUGIN_NAMES.join(', ')}. ` +
          `Its configuration goes in the field named after it (${PLUGIN_FIELDS.map((f) => f.field).join(', ')}).`,
      },
    ),
    ...typedFields,
    config: Type.Optional(
      Type.Unsafe<Record<string, unknown>>({
        type: 'object',
        'x-kubernetes-preserve-unknown-fields': true,
        description:
          'Deprecated: the configuration in the field named after the plugin (rateLimiting, jwt, …) is checked ' +
          'when applied; this untyped form only by the controller, which reports errors in status. ' +
          '`sluice migrate -f FILE` rewrites it.',
      }),
    ),
  },
  {
    additionalProperties: false,
    description: 'Which plugin to run (`plugin`) and its configuration (the field named after it).',
    'x-kubernetes-validations': UNION_RULES,
  },
);
/** rate-limiting → rateLimiting, as configField does. */
type Camel<S extends string> = S extends `${infer H}-${infer T}` ? `${H}${Capitalize<Camel<T>>}` : S;
type Manifest = (typeof PLUGIN_MANIFESTS)[number];
/** The schema built from a list reads as an index signature: the type names each field with its config. */
export type GatewayPluginSpec = { plugin: PluginName; config?: Record<string, unknown> } & {
  [M in Manifest as Camel<M['name']>]?: Static<M['schema']>;
};

/** The spec's plugin configuration and the field it was written in (typed, or the deprecated `config`). */
export function pluginConfigOf(spec: { plugin: string } & Record<string, unknown>): {
  field: string;
  config: Record<string, unknown> | undefined;
} {
  const field = configField(spec.plugin);
  if (spec[field] !== undefined) return { field, config: spec[field] as Record<string, unknown> };
  if (spec.config !== undefined) return { field: 'config', config: spec.config as Record<string, unknown> };
  return { field, config: undefined };
}

export const GatewayPluginStatus = Type.Object(
  {
    ...Status.properties,
    routes: Type.Optional(
      Type.Integer({
        minimum: 0,
        description: 'How many GatewayRoutes reference this plugin (at service or route scope).',
      }),
    ),
  },
  { description: 'What the controller observed of this object.' },
);
export type GatewayPluginStatus = Static<typeof GatewayPluginStatus>;

export interface GatewayPlugin {
  apiVersion: 'sluice.dev/v1alpha1';
  kind: 'GatewayPlugin';
  metadata: ObjectMeta;
  spec: GatewayPluginSpec;
  status?: GatewayPluginStatus;
}
