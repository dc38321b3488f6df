/**
 * oidc config: bearer access tokens of one OpenID provider, found from its `issuer` alone
 * (discovery: /.well-known/openid-configuration gives the JWKS and the introspection endpoint).
 * JWT access tokens are verified locally with the jwt plugin's checks (pinned algorithms, `iss`,
 * `aud` and `exp` required, skew, size cap); opaque tokens are checked by RFC 7662 introspection
 * with the client credentials below, the secret a secretKeyRef the controller resolves into
 * `value` (base64). `scopes` are required of every token on the routes carrying the plugin.
 */
import { type Static, Type } from '@sinclair/typebox';
import { pluginManifest } from '../../config/manifest.ts';
import type { ConfigProblem } from '../../config/config-problem.ts';
import { DURATION_PATTERN, parseDuration } from '../../config/duration.ts';
import { SecretKeyRefSchema } from '../../config/secret-ref.ts';
import { AlgorithmsSchema, MaxLifetimeSchema, TokenSchemas } from '../jwt/manifest.ts';

const Duration = (description: string) =>
  Type.Optional(Type.String({ pattern: DURATION_PATTERN, maxLength: 32, description }));
/** RFC 6749 §3.3 scope-token: printable ASCII without space, '"' or '\'. */
const SCOPE_PATTERN = '^[\\x21\\x23-\\x5B\\x5D-\\x7E]+$';

export const OidcConfig = Type.Object(
  {
    issuer: Type.String({
      pattern: '^https?://',
      maxLength: 1024,
      description:
        'The provider, exactly as its tokens name it (`iss`); its metadata is read from <issuer>/.well-known/openid-configuration.',
    }),
    audiences: Type.Array(Type.String({ minLength: 1, maxLength: 1024 }), {
      minItems: 1,
      maxItems: 32,
      description: 'The token `aud` must hold one of these (an introspection answer, when it names one).',
    }),
    algorithms: AlgorithmsSchema,
    maxLifetime: MaxLifetimeSchema,
    scopes: Type.Optional(
      Type.Array(Type.String({ pattern: SCOPE_PATTERN, maxLength: 256 }), {
        maxItems: 32,
        description:
          'Scopes every token must hold on the routes carrying this plugin; one missing is a 403 (insufficient_scope).',
      }),
    ),
    discoveryRefresh: Duration(
      'How often the provider metadata and keys are read again (default 1h); the last good ones are kept while it is down.',
    ),
    introspection: Type.Optional(
      Type.Object(
        {
          clientId: Type.String({ minLength: 1, maxLength: 256 }),
          clientSecret: Type.Object(
            {
              secretKeyRef: SecretKeyRefSchema,
              value: Type.Optional(
                Type.String({ description: 'Set by the controller from the Secret (base64).' }),
              ),
            },
            { additionalProperties: false, description: 'The client secret (client_secret_basic).' },
          ),
          cacheTtl: Duration(
            'An active answer is kept until the token exp and at most this long (default 60s): a revoked token works at most that long.',
          ),
          cacheEntries: Type.Optional(
            Type.Integer({
              minimum: 1,
              maximum: 1_000_000,
              description: 'Answers kept at most (default 10000).',
            }),
          ),
          timeout: Duration('Time allowed for one introspection call (default 5s).'),
          onError: Type.Optional(
            Type.Union([Type.Literal('unavailable'), Type.Literal('unauthorized')], {
              description:
                'When the provider cannot answer: 503 (unavailable, default) or 401 (unauthorized). Never let through.',
            }),
          ),
        },
        {
          additionalProperties: false,
          description: 'RFC 7662 introspection of opaque tokens (without it, only JWT access tokens pass).',
        },
      ),
    ),
    ...TokenSchemas,
  },
  {
    additionalProperties: false,
    description: 'OpenID Connect bearer tokens; the caller is the token subject (or client) of the issuer.',
  },
);
export type OidcConfig = Static<typeof OidcConfig>;

function checkOidcConfig(c: OidcConfig): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  const ttl = c.introspection?.cacheTtl;
  if (ttl !== undefined && (parseDuration(ttl) ?? 0) > 3_600_000)
    problems.push({
      field: 'introspection.cacheTtl',
      message: 'must be at most 1h (a revoked token works that long)',
    });
  if (c.discoveryRefresh !== undefined && (parseDuration(c.discoveryRefresh) ?? 0) < 10_000)
    problems.push({ field: 'discoveryRefresh', message: 'must be at least 10s' });
  return problems;
}

export const manifest = pluginManifest({
  name: 'oidc',
  phase: 'authenticate',
  schema: OidcConfig,
  checks: checkOidcConfig,
  secrets: 'value',
  load: (): Promise<{ default: unknown }> => import('./index.ts'),
});
