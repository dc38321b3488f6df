/**
 * concurrency-limiting config: how many requests of one client (by address, as rate-limiting's
 * limitBy ip reads it) may be in progress at once on the routes carrying the plugin, counted in
 * each data-plane process, as nginx's limit_conn counts the connections whose request it is
 * serving. A WebSocket counts while it is open.
 */
import { type Static, Type } from '@sinclair/typebox';
import { pluginManifest } from '../../config/manifest.ts';

export const ConcurrencyLimitingConfig = Type.Object(
  {
    perClient: Type.Integer({
      minimum: 1,
      maximum: 1_000_000,
      description:
        'Requests of one client address in progress at once, per data-plane process; past it 429 (SLC_ERR_RATE_LIMITED).',
    }),
  },
  {
    additionalProperties: false,
    description: 'Concurrent requests per client address; over it, 429.',
  },
);
export type ConcurrencyLimitingConfig = Static<typeof ConcurrencyLimitingConfig>;

export const manifest = pluginManifest({
  name: 'concurrency-limiting',
  phase: 'rate-limit',
  schema: ConcurrencyLimitingConfig,
});
