/** GatewayPlugin: one plugin instance and its configuration, referenced by GatewayRoutes. */
import { type Static, Type } from '@sinclair/typebox';
import { PLUGIN_NAMES } from '../../dataplane/config/catalog.ts';
import type { ObjectMeta, Status } from './common.ts';

export const GatewayPluginSpec = Type.Object(
  {
    plugin: Type.Union(
      PLUGIN_NAMES.map((n) => Type.Literal(n)),
      { description: `The built-in plugin to run: one of ${PLUGIN_NAMES.join(', ')}.` },
    ),
    config: Type.Optional(
      Type.Unsafe<Record<string, unknown>>({
        type: 'object',
        'x-kubernetes-preserve-unknown-fields': true,
        description:
          'Configuration of the plugin; its fields depend on `plugin` (see the README). ' +
          "The controller validates it against the plugin's schema and reports errors in status.",
      }),
    ),
  },
  { additionalProperties: false, description: 'Which plugin to run and how.' },
);
export type GatewayPluginSpec = Static<typeof GatewayPluginSpec>;

export interface GatewayPlugin {
  apiVersion: 'sluice.dev/v1alpha1';
  kind: 'GatewayPlugin';
  metadata: ObjectMeta;
  spec: GatewayPluginSpec;
  status?: Static<typeof Status>;
}
