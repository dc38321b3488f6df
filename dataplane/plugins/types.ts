/**
 * What a plugin does, beside its manifest (what the contract knows of it). The runtime calls
 * `create` once per GatewayPlugin per snapshot (its caches, JWKS and timers are shared by every
 * route that carries it), `bind` once per route (route-specific state computed then, never per
 * request), and `close` when the snapshot is retired.
 */
import type { Static, TSchema } from '@sinclair/typebox';
import type { PluginManifest } from '../config/manifest.ts';
import type { Route } from '../config/route-table.ts';
import type { RequestHook, ResponseHook } from '../pipeline/context.ts';
import type { RuntimeDeps } from '../pipeline/route.ts';

export interface PluginHooks {
  onRequest?: RequestHook;
  onResponse?: ResponseHook;
}

/** One GatewayPlugin, live for one snapshot. */
export interface LivePlugin {
  bind(route: Route): PluginHooks;
  close?(): void;
}

export interface Plugin<Config> {
  /** Compiles the (already validated) config; called when a snapshot is built, never per request. */
  create(config: Config, deps: RuntimeDeps): LivePlugin;
}

/** A plugin's runtime, typed by its manifest's schema. */
export const definePlugin = <S extends TSchema>(_manifest: PluginManifest<S>, plugin: Plugin<Static<S>>) =>
  plugin;
