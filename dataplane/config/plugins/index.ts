/**
 * The built-in plugins and their config schemas: the one list both the controller (CRD enum,
 * validation of GatewayPlugin.config) and the data plane (validateRouteTable) read.
 */
import type { TSchema } from '@sinclair/typebox';
import { checkIdempotencyConfig, IdempotencyConfig } from './idempotency.ts';
import { JwtConfig } from './jwt.ts';
import { KeyAuthConfig } from './key-auth.ts';
import type { ConfigProblem } from './problem.ts';
import { checkRateLimitingConfig, RateLimitingConfig } from './rate-limiting.ts';
import { RequestTransformerConfig } from './request-transformer.ts';

export const PLUGIN_SCHEMAS = {
  'request-transformer': RequestTransformerConfig,
  idempotency: IdempotencyConfig,
  'rate-limiting': RateLimitingConfig,
  'key-auth': KeyAuthConfig,
  jwt: JwtConfig,
} as const satisfies Record<string, TSchema>;

export type PluginName = keyof typeof PLUGIN_SCHEMAS;

/**
 * Rules across fields, checked after the schema by both the controller (GatewayPlugin status)
 * and the data plane (validateRouteTable), so a bad config is named where it was written.
 */
// biome-ignore lint/suspicious/noExplicitAny: each check takes its plugin's config type
export const PLUGIN_CHECKS: Partial<Record<PluginName, (config: any) => ConfigProblem[]>> = {
  idempotency: checkIdempotencyConfig,
  'rate-limiting': checkRateLimitingConfig,
};

/**
 * What the controller puts next to a plugin's secretKeyRefs: the value's SHA-256 (enough to
 * check a presented credential: key-auth), or the value itself, base64 (keys that verify: jwt).
 */
export const SECRET_RESOLUTION: Partial<Record<PluginName, 'sha256' | 'value'>> = {
  'key-auth': 'sha256',
  jwt: 'value',
};
export const PLUGIN_NAMES = Object.keys(PLUGIN_SCHEMAS) as PluginName[];
