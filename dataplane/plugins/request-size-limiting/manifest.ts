/**
 * request-size-limiting config: the largest request body the routes carrying it take, lower than
 * the data plane's --max-body-bytes (a larger value changes nothing: that limit still holds). It
 * is the same limit, per route: a Content-Length over it is answered 413 before anything else
 * runs, a chunked (or HTTP/2) body is cut off with 413 as it streams past it.
 */
import { type Static, Type } from '@sinclair/typebox';
import { pluginManifest } from '../../config/manifest.ts';

export const RequestSizeLimitingConfig = Type.Object(
  {
    maxBytes: Type.Integer({
      minimum: 1,
      maximum: Number.MAX_SAFE_INTEGER,
      description: 'The largest request body, in bytes; over it 413 (SLC_ERR_BODY_TOO_LARGE).',
    }),
  },
  { additionalProperties: false, description: 'The largest request body the route takes.' },
);
export type RequestSizeLimitingConfig = Static<typeof RequestSizeLimitingConfig>;

export const manifest = pluginManifest({
  name: 'request-size-limiting',
  phase: 'access',
  schema: RequestSizeLimitingConfig,
});
