/**
 * jwt config: tokens verified per issuer, with algorithms pinned by the configuration (never
 * taken from the token), keys from Secrets (PEM public keys, or HMAC secrets) or a remote
 * JWKS. `iss`, `aud` and `exp` are required. In a GatewayPlugin each key is a secretKeyRef;
 * the controller copies its value into `value` (base64) for the data plane.
 */
import { createPublicKey, createSecretKey, type KeyObject } from 'node:crypto';
import { type Static, Type } from '@sinclair/typebox';
import type { ConfigProblem } from '../../config/config-problem.ts';
import { secretValueProblem } from '../../config/secret-value-check.ts';
import { HEADER_NAME_PATTERN } from '../../config/http-grammar.ts';
import { pluginManifest } from '../../config/manifest.ts';
import { DURATION_PATTERN, parseDuration } from '../../config/duration.ts';
import { SecretKeyRefSchema } from '../../config/secret-ref.ts';

const ALGORITHMS = [
  'HS256',
  'HS384',
  'HS512',
  'RS256',
  'RS384',
  'RS512',
  'PS256',
  'PS384',
  'PS512',
  'ES256',
  'ES384',
  'ES512',
  'EdDSA',
] as const;
const HEADER = HEADER_NAME_PATTERN;
const SHORT_JWKS_REFRESH = 'must be at least 1s';

/** The algorithms an issuer accepts: pinned by the configuration, never the token's choice. */
export const AlgorithmsSchema = Type.Array(
  Type.Union(
    ALGORITHMS.map((a) => Type.Literal(a)),
    { description: 'A JWS algorithm (RFC 7518, and EdDSA).' },
  ),
  {
    minItems: 1,
    maxItems: ALGORITHMS.length,
    description: 'Algorithms accepted for this issuer; a token naming another one is refused.',
  },
);
export const MaxLifetimeSchema = Type.Optional(
  Type.String({
    pattern: DURATION_PATTERN,
    maxLength: 32,
    description:
      'Refuse tokens that live longer than this (exp - iat, or exp - now without iat), e.g. 24h: a ' +
      'stolen long-lived token is refused. Off by default; recommended.',
  }),
);
/** Settings every bearer-token plugin has (jwt, oidc). */
export const TokenSchemas = {
  clockSkew: Type.Optional(
    Type.String({
      pattern: DURATION_PATTERN,
      maxLength: 32,
      description: 'Tolerance on exp and nbf (default 30s).',
    }),
  ),
  maxTokenBytes: Type.Optional(
    Type.Integer({
      minimum: 256,
      maximum: 65_536,
      description: 'Longer tokens are refused (default 8192).',
    }),
  ),
  claimsToHeaders: Type.Optional(
    Type.Array(
      Type.Object(
        {
          claim: Type.String({
            minLength: 1,
            maxLength: 256,
            description: 'A top-level claim of the token.',
          }),
          header: Type.String({
            pattern: HEADER,
            maxLength: 128,
            description: 'The request header that carries its value upstream.',
          }),
        },
        { additionalProperties: false, description: 'One claim sent upstream.' },
      ),
      {
        maxItems: 16,
        description:
          'Claims sent upstream in headers (a client copy is removed; values with CR, LF or NUL are dropped).',
      },
    ),
  ),
};

export const JwtConfig = Type.Object(
  {
    issuers: Type.Array(
      Type.Object(
        {
          issuer: Type.String({ minLength: 1, maxLength: 1024, description: 'The exact `iss` accepted.' }),
          audiences: Type.Array(Type.String({ minLength: 1, maxLength: 1024, description: 'An audience.' }), {
            minItems: 1,
            maxItems: 32,
            description: 'The token `aud` must hold one of these.',
          }),
          algorithms: AlgorithmsSchema,
          maxLifetime: MaxLifetimeSchema,
          jwksUri: Type.Optional(
            Type.String({
              pattern: '^https?://',
              maxLength: 2048,
              description:
                'JWKS of the issuer: cached, fetched again once older than jwksRefresh and (once, with a cooldown) for an unknown kid; kept when a fetch fails.',
            }),
          ),
          jwksRefresh: Type.Optional(
            Type.String({
              pattern: DURATION_PATTERN,
              maxLength: 32,
              description:
                'The JWKS is fetched again once older than this (default 10m, at least 1s): a key the provider withdraws stops verifying within it.',
            }),
          ),
          keys: Type.Optional(
            Type.Array(
              Type.Object(
                {
                  kid: Type.Optional(
                    Type.String({
                      minLength: 1,
                      maxLength: 256,
                      description:
                        'The key id tokens name in their header; without it, the key is tried for any kid.',
                    }),
                  ),
                  secretKeyRef: SecretKeyRefSchema,
                  value: Type.Optional(
                    Type.String({ description: 'Set by the controller from the Secret (base64).' }),
                  ),
                },
                { additionalProperties: false, description: 'A static key of the issuer.' },
              ),
              {
                maxItems: 32,
                description: 'Static keys: a PEM public key, or the HMAC secret, in a Secret.',
              },
            ),
          ),
        },
        {
          additionalProperties: false,
          description: 'One issuer whose tokens are accepted.',
          'x-kubernetes-validations': [
            {
              rule: "!has(self.jwksRefresh) || duration(self.jwksRefresh) >= duration('1s')",
              message: SHORT_JWKS_REFRESH,
              fieldPath: '.jwksRefresh',
            },
          ],
        },
      ),
      {
        minItems: 1,
        maxItems: 16,
        description: 'The issuers whose tokens are accepted, each with its audiences, algorithms and keys.',
      },
    ),
    header: Type.Optional(
      Type.String({
        pattern: HEADER,
        maxLength: 128,
        description:
          'Where the token is: Authorization (default, "Bearer <token>"), or another header holding the token alone.',
      }),
    ),
    ...TokenSchemas,
  },
  {
    additionalProperties: false,
    description: 'JWT verification; the caller is the token subject of its issuer.',
  },
);
export type JwtConfig = Static<typeof JwtConfig>;

/**
 * A static key from its Secret's value (base64, as the controller resolves it): a PEM public key
 * (or a certificate, or a private key whose public half is taken), else the HMAC secret. Throws
 * when a PEM does not parse. The one reading of a key: the plugin's and its check's.
 */
export function staticKey(value: string): KeyObject {
  const bytes = Buffer.from(value, 'base64');
  const text = bytes.toString('utf8');
  return text.includes('-----BEGIN') ? createPublicKey(text) : createSecretKey(bytes);
}

/**
 * An issuer needs somewhere to find keys. Each resolved key must be one the plugin can read. Runs where the value is there: the
 * controller once the Secrets are resolved, and the data plane's door; before resolution
 * (no `value` yet) there is nothing to read.
 */
const NO_KEYS = 'needs jwksUri or keys: without either, no token of this issuer could verify';

function checkJwtConfig(c: JwtConfig): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  c.issuers.forEach((issuer, i) => {
    if (issuer.jwksUri === undefined && (issuer.keys?.length ?? 0) === 0)
      problems.push({ field: `issuers[${i}]`, message: NO_KEYS });
    if (issuer.jwksRefresh !== undefined && (parseDuration(issuer.jwksRefresh) ?? 0) < 1_000)
      problems.push({ field: `issuers[${i}].jwksRefresh`, message: SHORT_JWKS_REFRESH });
    issuer.keys?.forEach((k, j) => {
      if (k.value === undefined) return;
      const problem = secretValueProblem('jwt key', k.value, (bytes) => staticKey(bytes.toString('base64')));
      if (problem !== null)
        problems.push({
          field: `issuers[${i}].keys[${j}]`,
          message: `the Secret's value is not a key: a PEM that does not parse (${problem})`,
        });
    });
  });
  return problems;
}

export const manifest = pluginManifest({
  name: 'jwt',
  phase: 'authenticate',
  schema: JwtConfig,
  checks: checkJwtConfig,
  secrets: 'value',
});
