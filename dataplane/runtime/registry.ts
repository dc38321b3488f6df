/**
 * The runtime of every plugin and handler in the catalog, loaded once when the data plane
 * starts (the controller reads the same catalog's manifests and never loads these).
 */
import { HANDLER_MANIFESTS, PLUGIN_MANIFESTS } from '../config/catalog.ts';
import type { AnyHandlerManifest, AnyPluginManifest } from '../config/manifest.ts';
import type { Handler } from '../handlers/types.ts';
import type { Plugin } from '../plugins/types.ts';

export interface LoadedPlugin {
  manifest: AnyPluginManifest;
  plugin: Plugin<unknown>;
}
export interface LoadedHandler {
  manifest: AnyHandlerManifest;
  handler: Handler<unknown>;
}

export const PLUGINS: ReadonlyMap<string, LoadedPlugin> = new Map(
  await Promise.all(
    PLUGIN_MANIFESTS.map(async (m) => {
      const plugin = (await m.load()).default as Plugin<unknown>;
      return [m.name, { manifest: m as AnyPluginManifest, plugin }] as const;
    }),
  ),
);

export const HANDLERS: ReadonlyMap<string, LoadedHandler> = new Map(
  await Promise.all(
    HANDLER_MANIFESTS.map(async (m) => {
      const handler = (await m.load()).default as Handler<unknown>;
      return [m.kind, { manifest: m as AnyHandlerManifest, handler }] as const;
    }),
  ),
);
