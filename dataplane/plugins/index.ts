/** Every built-in plugin, listed explicitly (no import side effects). Its config schema is in config/plugins. */
import type { PluginName } from '../config/plugins/index.ts';
import { idempotency } from './idempotency/index.ts';
import { jwt } from './jwt/index.ts';
import { keyAuth } from './key-auth/index.ts';
import { rateLimiting } from './rate-limiting/index.ts';
import { requestTransformer } from './request-transformer/index.ts';
import type { Plugin } from './types.ts';

// biome-ignore lint/suspicious/noExplicitAny: each plugin takes its own config type
export const PLUGINS: Record<PluginName, Plugin<any>> = {
  'request-transformer': requestTransformer,
  idempotency,
  'rate-limiting': rateLimiting,
  'key-auth': keyAuth,
  jwt,
};
