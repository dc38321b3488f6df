/**
 * basic-auth config: HTTP Basic authentication against htpasswd entries held in Secrets (as
 * ingress-nginx's auth-type: basic). Each credential names a Secret key with a secretKeyRef: a
 * whole htpasswd file ("user:hash" lines), or, with `user`, one user's hash (ingress-nginx's
 * auth-map, a Secret whose keys are the users). The controller copies the value (hashes, never a
 * password) into `value`; the data plane verifies bcrypt ($2a$/$2b$/$2y$), apr1/MD5-crypt
 * ($apr1$, $1$) and SHA-1 ({SHA}) hashes.
 */
import { type Static, Type } from '@sinclair/typebox';
import { HEADER_NAME_PATTERN } from '../../config/http-grammar.ts';
import { pluginManifest } from '../../config/manifest.ts';
import { SecretKeyRefSchema } from '../../config/secret-ref.ts';

export const BasicAuthConfig = Type.Object(
  {
    realm: Type.Optional(
      Type.String({
        maxLength: 256,
        pattern: '^[^"\\\\\\r\\n]*$',
        description:
          'The realm of the WWW-Authenticate challenge (default "sluice"); no quotes or backslashes.',
      }),
    ),
    consumerHeader: Type.Optional(
      Type.String({
        pattern: HEADER_NAME_PATTERN,
        maxLength: 128,
        description: 'Send the user name upstream in this header (a client-sent copy is always removed).',
      }),
    ),
    credentials: Type.Array(
      Type.Object(
        {
          secretKeyRef: SecretKeyRefSchema,
          user: Type.Optional(
            Type.String({
              minLength: 1,
              maxLength: 253,
              pattern: '^[^:\\r\\n]+$',
              description:
                "The key's value is this user's hash (an auth-map); without it the value is an htpasswd file.",
            }),
          ),
          value: Type.Optional(
            Type.String({
              description: 'Set by the controller from the Secret (base64); never written by hand.',
            }),
          ),
        },
        { additionalProperties: false, description: 'An htpasswd file, or one user’s hash, in a Secret.' },
      ),
      { minItems: 1, maxItems: 1000, description: 'Where the users and their password hashes are.' },
    ),
  },
  {
    additionalProperties: false,
    description:
      'HTTP Basic authentication against htpasswd hashes in Secrets; the user becomes the caller identity.',
  },
);
export type BasicAuthConfig = Static<typeof BasicAuthConfig>;

export const manifest = pluginManifest({
  name: 'basic-auth',
  phase: 'authenticate',
  schema: BasicAuthConfig,
  secrets: 'value',
});
