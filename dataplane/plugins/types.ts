/**
 * What a plugin does, beside its manifest (what the contract knows of it). The runtime calls
 * `create` once per GatewayPlugin per snapshot (its caches, JWKS and timers are shared by every
 * route that carries it), `bind` once per route (route-specific state computed then, never per
 * request), and `close` when the snapshot is retired. What it keeps beyond a snapshot it
 * declares here: its metrics (made on the data plane's registry when it starts) and its stores
 * (made once, Redis or memory, and kept across snapshots); per request, its Slots (slot.ts).
 */
import type { Static, TSchema } from '@sinclair/typebox';
import type { PluginManifest } from '../config/manifest.ts';
import type { Route } from '../config/route-table.ts';
import type { RequestHook, ResponseHook } from '../pipeline/context.ts';
import type { RuntimeDeps } from '../pipeline/route.ts';
import type { MetricSet } from '../observability/metric-set.ts';
import type { StoreKind } from '../stores/store-kind.ts';

export interface PluginHooks {
  onRequest?: RequestHook;
  onResponse?: ResponseHook;
  /** A lower bound on the request body of the route carrying the plugin (the data plane's limit, per route). */
  maxBodyBytes?: number;
}

/** One GatewayPlugin, live for one snapshot. */
export interface LivePlugin {
  bind(route: Route): PluginHooks;
  close?(): void;
}

export interface Plugin<Config> {
  /** Its metrics: registered when the data plane starts; `deps.metrics.of(set)` in create. */
  metrics?: readonly MetricSet<unknown>[];
  /** The stores it needs: made when the data plane starts; `deps.stores.of(kind)` in create. */
  stores?: readonly StoreKind<unknown>[];
  /** Compiles the (already validated) config; called when a snapshot is built, never per request. */
  create(config: Config, deps: RuntimeDeps): LivePlugin;
}

/** A plugin's runtime, typed by its manifest's schema. */
export const definePlugin = <S extends TSchema>(_manifest: PluginManifest<S>, plugin: Plugin<Static<S>>) =>
  plugin;
