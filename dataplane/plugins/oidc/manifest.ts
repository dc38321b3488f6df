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
import { SecretValueSchema } from '../../config/secret-ref.ts';
import { HEADER_NAME_PATTERN } from '../../config/http-grammar.ts';
import { AlgorithmsSchema, MaxLifetimeSchema, TokenSchemas } from '../jwt/manifest.ts';

const Duration = (description: string) =>
  Type.Optional(Type.String({ pattern: DURATION_PATTERN, maxLength: 32, description }));
const FromSecret = SecretValueSchema;
/** RFC 6749 §3.3 scope-token: printable ASCII without space, '"' or '\'. */
const SCOPE_PATTERN = '^[\\x21\\x23-\\x5B\\x5D-\\x7E]+$';
const LONG_CACHE = 'must be at most 1h (a revoked token works that long)';
const SHORT_REFRESH = 'must be at least 10s';
/** A session cookie key's bytes at least: A256GCM takes a 256-bit key (its SHA-256 is used). */
export const COOKIE_KEY_BYTES = 32;

export const OidcConfig = Type.Object(
  {
    issuer: Type.String({
      pattern: '^https?://',
      maxLength: 1024,
      description:
        'The provider, exactly as its tokens name it (`iss`); its metadata is read from <issuer>/.well-known/openid-configuration.',
    }),
    audiences: Type.Array(Type.String({ minLength: 1, maxLength: 1024, description: 'An audience.' }), {
      minItems: 1,
      maxItems: 32,
      description: 'The token `aud` must hold one of these (an introspection answer, when it names one).',
    }),
    algorithms: AlgorithmsSchema,
    maxLifetime: MaxLifetimeSchema,
    scopes: Type.Optional(
      Type.Array(Type.String({ pattern: SCOPE_PATTERN, maxLength: 256, description: 'A scope.' }), {
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
          clientId: Type.String({
            minLength: 1,
            maxLength: 256,
            description: 'The client id (client_secret_basic).',
          }),
          clientSecret: FromSecret('The client secret (client_secret_basic).'),
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
          'x-kubernetes-validations': [
            {
              rule: "!has(self.cacheTtl) || duration(self.cacheTtl) <= duration('1h')",
              message: LONG_CACHE,
              fieldPath: '.cacheTtl',
            },
          ],
        },
      ),
    ),
    login: Type.Optional(
      Type.Object(
        {
          clientId: Type.String({
            minLength: 1,
            maxLength: 256,
            description: 'The client id registered at the provider.',
          }),
          clientSecret: FromSecret('The client secret (client_secret_basic).'),
          redirectUri: Type.String({
            pattern: '^https?://[^/?#]+/[^?#]*$',
            maxLength: 2048,
            description:
              'The callback registered at the provider; its path must be on a route carrying this plugin.',
          }),
          logoutPath: Type.String({
            pattern: '^/[^?#]*$',
            maxLength: 1024,
            description:
              'Ends the session: the cookie is cleared and the browser sent to the provider to log out.',
          }),
          postLogoutRedirectUri: Type.Optional(
            Type.String({
              pattern: '^https?://',
              maxLength: 2048,
              description: 'Where the provider sends the browser after logout (registered there too).',
            }),
          ),
          cookieKeys: Type.Array(FromSecret('At least 32 bytes; the first encrypts, every one decrypts.'), {
            minItems: 1,
            maxItems: 2,
            description: 'Keys of the session cookie (JWE, A256GCM): two while rotating.',
          }),
          cookieName: Type.Optional(
            Type.String({
              pattern: '^[A-Za-z0-9_-]+$',
              maxLength: 64,
              description: 'Name of the session cookie.',
            }),
          ),
          sessionLifetime: Duration('A session ends this long after the login (default 8h).'),
          scopes: Type.Optional(
            Type.Array(Type.String({ pattern: SCOPE_PATTERN, maxLength: 256, description: 'A scope.' }), {
              maxItems: 32,
              description: 'Scopes asked for besides openid.',
            }),
          ),
          upstream: Type.Optional(
            Type.Object(
              {
                token: Type.Union([Type.Literal('id'), Type.Literal('access')], {
                  description: 'id (the ID token) or access (the access token).',
                }),
                header: Type.String({
                  pattern: HEADER_NAME_PATTERN,
                  maxLength: 128,
                  description: 'The request header that carries it.',
                }),
              },
              {
                additionalProperties: false,
                description:
                  'Which token the upstream gets, in which header (Authorization: "Bearer <token>"; a client copy is removed).',
              },
            ),
          ),
        },
        {
          additionalProperties: false,
          description:
            'Browser login (authorization code flow with PKCE, state and nonce) for requests without a bearer token.',
        },
      ),
    ),
    ...TokenSchemas,
  },
  {
    additionalProperties: false,
    description: 'OpenID Connect bearer tokens; the caller is the token subject (or client) of the issuer.',
    'x-kubernetes-validations': [
      {
        rule: "!has(self.discoveryRefresh) || duration(self.discoveryRefresh) >= duration('10s')",
        message: SHORT_REFRESH,
        fieldPath: '.discoveryRefresh',
      },
    ],
  },
);
export type OidcConfig = Static<typeof OidcConfig>;

function checkOidcConfig(c: OidcConfig): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  const ttl = c.introspection?.cacheTtl;
  if (ttl !== undefined && (parseDuration(ttl) ?? 0) > 3_600_000)
    problems.push({ field: 'introspection.cacheTtl', message: LONG_CACHE });
  if (c.discoveryRefresh !== undefined && (parseDuration(c.discoveryRefresh) ?? 0) < 10_000)
    problems.push({ field: 'discoveryRefresh', message: SHORT_REFRESH });
  // A Secret's value is there once the controller resolved it (and at the data plane's door).
  c.login?.cookieKeys.forEach((k, i) => {
    if (k.value !== undefined && Buffer.from(k.value, 'base64').length < COOKIE_KEY_BYTES)
      problems.push({
        field: `login.cookieKeys[${i}]`,
        message: `the Secret's value must hold at least ${COOKIE_KEY_BYTES} bytes`,
      });
  });
  return problems;
}

export const manifest = pluginManifest({
  name: 'oidc',
  phase: 'authenticate',
  schema: OidcConfig,
  checks: checkOidcConfig,
  secrets: 'value',
});
