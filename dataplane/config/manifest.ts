/**
 * What the contract knows of a plugin or a terminal handler: its manifest. A manifest is plain
 * data the controller may read (name, phase, config schema, cross-field checks, how its Secret
 * references resolve, what it needs); its runtime code is behind `load`, which only the data
 * plane calls. So the controller validates every plugin's config without loading a line of
 * plugin runtime, and a plugin is still one folder: `manifest.ts` (this shape) beside
 * `index.ts` (what it does), and one line in `catalog.ts`.
 */
import type { Static, TSchema } from '@sinclair/typebox';
import type { ConfigProblem } from './config-problem.ts';
import type { Phase } from './phases.ts';

export interface PluginNeeds {
  /** The whole request body, read once (with the body limit) before this plugin's hook runs. */
  requestBody?: boolean;
  /** The response body: the plugin adds a tap (ResponseTap) to see it on its way to the client. */
  responseBody?: boolean;
}

export interface PluginManifest<S extends TSchema = TSchema, N extends string = string> {
  name: N;
  /** Where its hooks run (phases.ts). */
  phase: Phase;
  /** Its config: the CRD's validation of GatewayPlugin.config and validateRouteTable read this one schema. */
  schema: S;
  /** Rules across fields the schema cannot say; checked by the controller and at the data plane's door. */
  checks?: (config: Static<S>) => ConfigProblem[];
  /**
   * How the controller resolves the config's secretKeyRefs: the value's SHA-256 (enough to check
   * a presented credential) or the value itself, base64 (keys that verify). Default sha256.
   */
  secrets?: 'sha256' | 'value';
  needs?: PluginNeeds;
  /** The runtime (the folder's index.ts): loaded by the data plane only. */
  load: () => Promise<{ default: unknown }>;
}

export interface HandlerManifest<S extends TSchema = TSchema, K extends string = string> {
  /** The route table's handler.type. */
  kind: K;
  /** The handler's entry in the route table (its `type` a literal of `kind`). */
  schema: S;
  /** The upstreams the entry refers to (its field and the id): each must exist in the table. */
  upstreams: (handler: Static<S>) => { field: string; id: string }[];
  needs?: Pick<PluginNeeds, 'requestBody'>;
  load: () => Promise<{ default: unknown }>;
}

/** Typed identity: keeps the schema's static type attached to `checks`. */
export const pluginManifest = <S extends TSchema, const N extends string>(
  m: PluginManifest<S, N>,
): PluginManifest<S, N> => m;
export const handlerManifest = <S extends TSchema, const K extends string>(
  m: HandlerManifest<S, K>,
): HandlerManifest<S, K> => m;

// biome-ignore lint/suspicious/noExplicitAny: the catalog holds manifests of every config type
export type AnyPluginManifest = PluginManifest<any>;
// biome-ignore lint/suspicious/noExplicitAny: likewise for every handler entry type
export type AnyHandlerManifest = HandlerManifest<any>;
