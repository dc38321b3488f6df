/**
 * key-auth config: API keys held in Secrets, one per consumer. In a GatewayPlugin each consumer
 * names its key with a secretKeyRef; the controller reads the Secret and puts only the key's
 * SHA-256 (`sha256`) in the snapshot, so no data plane, disk or log ever holds a key in clear.
 */
import { type Static, Type } from '@sinclair/typebox';
import { HEADER_NAME_PATTERN, TOKEN_PATTERN } from '../../config/http-grammar.ts';
import { pluginManifest } from '../../config/manifest.ts';
import { SecretKeyRefSchema } from '../../config/secret-ref.ts';

export const KeyAuthConfig = Type.Object(
  {
    keyNames: Type.Optional(
      Type.Array(
        Type.String({
          pattern: TOKEN_PATTERN,
          maxLength: 128,
          description: 'A header or query parameter name.',
        }),
        {
          minItems: 1,
          maxItems: 8,
          description: 'Header (or query parameter) names that may carry the key (default X-API-Key).',
        },
      ),
    ),
    in: Type.Optional(
      Type.Union([Type.Literal('header'), Type.Literal('query')], {
        description:
          'Where the key is read: header (default) or query. It is removed before the request goes upstream.',
      }),
    ),
    consumerHeader: Type.Optional(
      Type.String({
        pattern: HEADER_NAME_PATTERN,
        maxLength: 128,
        description: 'Send the consumer name upstream in this header (a client-sent copy is always removed).',
      }),
    ),
    consumers: Type.Array(
      Type.Object(
        {
          name: Type.String({
            minLength: 1,
            maxLength: 253,
            description: 'The consumer: rate limits and idempotency keys are scoped to it.',
          }),
          secretKeyRef: SecretKeyRefSchema,
          sha256: Type.Optional(
            Type.String({
              pattern: '^[0-9a-f]{64}$',
              description: 'Set by the controller from the Secret; never written by hand.',
            }),
          ),
        },
        { additionalProperties: false, description: 'One consumer and its key.' },
      ),
      { minItems: 1, maxItems: 10_000, description: 'Consumers and the Secret key each one presents.' },
    ),
  },
  {
    additionalProperties: false,
    description: 'API keys checked against Secrets; the consumer becomes the caller identity.',
  },
);
export type KeyAuthConfig = Static<typeof KeyAuthConfig>;

export const manifest = pluginManifest({
  name: 'key-auth',
  phase: 'authenticate',
  schema: KeyAuthConfig,
  secrets: 'sha256',
});
