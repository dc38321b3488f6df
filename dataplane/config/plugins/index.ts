/**
 * The built-in plugins and their config schemas: the one list both the controller (CRD enum,
 * validation of GatewayPlugin.config) and the data plane (validateRouteTable) read.
 */
import type { TSchema } from '@sinclair/typebox';
import { IdempotencyConfig } from './idempotency.ts';
import { JwtConfig } from './jwt.ts';
import { KeyAuthConfig } from './key-auth.ts';
import { RateLimitingConfig } from './rate-limiting.ts';
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
 * What the controller puts next to a plugin's secretKeyRefs: the value's SHA-256 (enough to
 * check a presented credential: key-auth), or the value itself, base64 (keys that verify: jwt).
 */
export const SECRET_RESOLUTION: Partial<Record<PluginName, 'sha256' | 'value'>> = {
  'key-auth': 'sha256',
  jwt: 'value',
};
export const PLUGIN_NAMES = Object.keys(PLUGIN_SCHEMAS) as PluginName[];
