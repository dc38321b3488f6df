/** What a plugin is: a phase and a factory that compiles its config into hooks, once per snapshot. */
import type { RequestHook, ResponseHook } from '../pipeline/context.ts';
import type { Phase } from '../pipeline/phases.ts';
import type { RuntimeDeps } from '../runtime/runtime-route.ts';

export interface PluginHooks {
  onRequest?: RequestHook;
  onResponse?: ResponseHook;
}

export interface Plugin<Config> {
  phase: Phase;
  /** Compiles the (already validated) config; called when a snapshot is built, never per request. */
  create(config: Config, deps: RuntimeDeps): PluginHooks;
}
