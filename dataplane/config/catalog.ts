/**
 * THE list of built-in plugins and terminal handlers: one line each. Everything else derives
 * from it: the CRD's enum of plugin names, the route table's schema, validation in the
 * controller and at the data plane's door, how Secrets resolve, and the names the data plane's
 * registry (runtime/registry.ts) must give an implementation. The manifests are plain data that
 * import only the contract, so this file, and the controller that reads it, load no runtime code.
 * Adding a plugin is its folder under plugins/, one line here and one in the registry; adding a
 * handler kind is the same under handlers/ (its manifest's `route` gives the GatewayRoute its
 * `routes[].<kind>` field and the controller its compile step).
 */
import { manifest as aggregate } from '../handlers/aggregate/manifest.ts';
import { manifest as grpc } from '../handlers/grpc/manifest.ts';
import { manifest as proxy } from '../handlers/proxy/manifest.ts';
import { manifest as redirect } from '../handlers/redirect/manifest.ts';
import { manifest as respond } from '../handlers/respond/manifest.ts';
import { manifest as soap } from '../handlers/soap/manifest.ts';
import { manifest as concurrencyLimiting } from '../plugins/concurrency-limiting/manifest.ts';
import { manifest as cors } from '../plugins/cors/manifest.ts';
import { manifest as ipRestriction } from '../plugins/ip-restriction/manifest.ts';
import { manifest as idempotency } from '../plugins/idempotency/manifest.ts';
import { manifest as jwt } from '../plugins/jwt/manifest.ts';
import { manifest as keyAuth } from '../plugins/key-auth/manifest.ts';
import { manifest as mtlsAuth } from '../plugins/mtls-auth/manifest.ts';
import { manifest as oidc } from '../plugins/oidc/manifest.ts';
import { manifest as proxyCache } from '../plugins/proxy-cache/manifest.ts';
import { manifest as rateLimiting } from '../plugins/rate-limiting/manifest.ts';
import { manifest as requestSizeLimiting } from '../plugins/request-size-limiting/manifest.ts';
import { manifest as requestTransformer } from '../plugins/request-transformer/manifest.ts';
import { manifest as responseTransformer } from '../plugins/response-transformer/manifest.ts';
import type { AnyHandlerManifest, AnyPluginManifest } from './manifest.ts';

export const PLUGIN_MANIFESTS = [
  requestTransformer,
  responseTransformer,
  idempotency,
  rateLimiting,
  keyAuth,
  jwt,
  cors,
  proxyCache,
  oidc,
  mtlsAuth,
  ipRestriction,
  requestSizeLimiting,
  concurrencyLimiting,
] as const;

export const HANDLER_MANIFESTS = [proxy, aggregate, soap, grpc, redirect, respond] as const;

export type PluginName = (typeof PLUGIN_MANIFESTS)[number]['name'];
export type HandlerKind = (typeof HANDLER_MANIFESTS)[number]['kind'];

export const PLUGIN_NAMES = PLUGIN_MANIFESTS.map((m) => m.name) as PluginName[];

const byName = new Map<string, AnyPluginManifest>(
  PLUGIN_MANIFESTS.map((m) => [m.name, m as AnyPluginManifest]),
);
const byKind = new Map<string, AnyHandlerManifest>(
  HANDLER_MANIFESTS.map((m) => [m.kind, m as AnyHandlerManifest]),
);

export const pluginManifest = (name: string): AnyPluginManifest | undefined => byName.get(name);
export const handlerManifest = (kind: string): AnyHandlerManifest | undefined => byKind.get(kind);
