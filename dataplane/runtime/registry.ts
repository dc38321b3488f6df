/**
 * The registry: each manifest of the catalog (plain data, config/catalog.ts) mapped to its
 * implementation, the folder's index.ts. The mapping lives here, in the runtime layer, because a
 * manifest must not reach its runtime (the controller reads manifests and never loads runtime
 * code); the runtime may import the plugins and handlers below it. One line per plugin and per
 * handler kind, keyed by the catalog's names, so a name without an implementation (or one
 * without a manifest) does not type-check, and `pairUp` refuses it when the data plane starts.
 */
import type { Static } from '@sinclair/typebox';
import { HANDLER_MANIFESTS, type HandlerKind, PLUGIN_MANIFESTS, type PluginName } from '../config/catalog.ts';
import type { AnyHandlerManifest, AnyPluginManifest } from '../config/manifest.ts';
import type { Handler } from '../handlers/types.ts';
import type { Plugin } from '../plugins/types.ts';

type PluginConfig<N> = Static<Extract<(typeof PLUGIN_MANIFESTS)[number], { name: N }>['schema']>;
type HandlerEntry<K> = Static<Extract<(typeof HANDLER_MANIFESTS)[number], { kind: K }>['schema']>;
/** A lazy import keeps each entry one line; every one of them is loaded at start (below). */
type Code<T> = () => Promise<{ default: T }>;

const PLUGIN_CODE: { [N in PluginName]: Code<Plugin<PluginConfig<N>>> } = {
  'request-transformer': () => import('../plugins/request-transformer/index.ts'),
  'response-transformer': () => import('../plugins/response-transformer/index.ts'),
  idempotency: () => import('../plugins/idempotency/index.ts'),
  'rate-limiting': () => import('../plugins/rate-limiting/index.ts'),
  'key-auth': () => import('../plugins/key-auth/index.ts'),
  jwt: () => import('../plugins/jwt/index.ts'),
  cors: () => import('../plugins/cors/index.ts'),
  'proxy-cache': () => import('../plugins/proxy-cache/index.ts'),
  oidc: () => import('../plugins/oidc/index.ts'),
  'mtls-auth': () => import('../plugins/mtls-auth/index.ts'),
  'ip-restriction': () => import('../plugins/ip-restriction/index.ts'),
  'request-size-limiting': () => import('../plugins/request-size-limiting/index.ts'),
  'concurrency-limiting': () => import('../plugins/concurrency-limiting/index.ts'),
};

const HANDLER_CODE: { [K in HandlerKind]: Code<Handler<HandlerEntry<K>>> } = {
  proxy: () => import('../handlers/proxy/index.ts'),
  aggregate: () => import('../handlers/aggregate/index.ts'),
  soap: () => import('../handlers/soap/index.ts'),
  grpc: () => import('../handlers/grpc/index.ts'),
  redirect: () => import('../handlers/redirect/index.ts'),
  respond: () => import('../handlers/respond/index.ts'),
};

/**
 * Each manifest with its code, by name; throws (naming them) when a manifest has no code or code
 * has no manifest: the types above already refuse both, this keeps a cast from hiding one.
 */
export function pairUp<M, C>(
  manifests: readonly M[],
  nameOf: (m: M) => string,
  code: Readonly<Record<string, C>>,
): Map<string, { manifest: M; code: C }> {
  const names = manifests.map(nameOf);
  const noCode = names.filter((n) => !Object.hasOwn(code, n));
  const noManifest = Object.keys(code).filter((n) => !names.includes(n));
  if (noCode.length > 0 || noManifest.length > 0)
    throw new Error(
      `the registry and the catalog disagree: no implementation for [${noCode.join(', ')}], ` +
        `no manifest for [${noManifest.join(', ')}]`,
    );
  return new Map(manifests.map((m) => [nameOf(m), { manifest: m, code: code[nameOf(m)] }]));
}

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
    [...pairUp<AnyPluginManifest, Code<unknown>>(PLUGIN_MANIFESTS, (m) => m.name, PLUGIN_CODE)].map(
      async ([name, { manifest, code }]) => {
        const plugin = (await code()).default as Plugin<unknown>;
        return [name, { manifest, plugin }] as const;
      },
    ),
  ),
);

export const HANDLERS: ReadonlyMap<string, LoadedHandler> = new Map(
  await Promise.all(
    [...pairUp<AnyHandlerManifest, Code<unknown>>(HANDLER_MANIFESTS, (m) => m.kind, HANDLER_CODE)].map(
      async ([kind, { manifest, code }]) => {
        const handler = (await code()).default as Handler<unknown>;
        return [kind, { manifest, handler }] as const;
      },
    ),
  ),
);
