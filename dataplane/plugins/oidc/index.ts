/**
 * oidc: bearer access tokens of one OpenID provider. The provider's metadata and keys come from
 * discovery (discovery.ts: refreshed, the last good kept). A JWT access token is verified
 * locally with the jwt plugin's checks (jwt-verify.ts); any other token is asked about by
 * introspection (RFC 7662), failing closed (503, or 401 by config) when the provider cannot
 * answer. Both kinds are remembered and coalesced by bearer.ts, an introspected one until
 * its exp and at most `cacheTtl`. A token without the plugin's `scopes` is a 403
 * insufficient_scope. The caller becomes `<iss>#<sub>` (the client_id for a token without sub).
 */
import { parseDuration } from '../../config/duration.ts';
import { decodeJwt, type JWTPayload } from 'jose';
import type { Span } from '../../observability/tracing.ts';
import type { RequestContext } from '../../pipeline/context.ts';
import { definePlugin } from '../types.ts';
import { bearerHook, type Outcome, refuseScope, type Verified } from '../bearer.ts';
import {
  claimHeaders,
  expiryMs,
  invalid,
  maxLifetimeMs,
  skewSeconds,
  verified,
  verifyJwt,
} from '../jwt-verify.ts';
import { discovery } from './discovery.ts';
import { introspect } from './introspection.ts';
import { loginHook } from './login.ts';
import { manifest } from './manifest.ts';

const unavailable = (detail: string): Outcome => ({ refuse: 'SLC_ERR_AUTH_UNAVAILABLE', detail });

export default definePlugin(manifest, {
  create(config, deps) {
    const skewS = skewSeconds(config.clockSkew);
    const claims = claimHeaders(config.claimsToHeaders);
    const lifetimeMs = maxLifetimeMs(config.maxLifetime);
    const provider = discovery(config.issuer, {
      refreshMs: parseDuration(config.discoveryRefresh ?? '1h') ?? 3_600_000,
      onFetch: (ok, error) =>
        ok
          ? undefined
          : deps.log.warn(
              { issuer: config.issuer, error },
              'oidc: provider read failed; keeping the last good',
            ),
    });
    const intro = config.introspection;
    const client = intro && {
      clientId: intro.clientId,
      secret: Buffer.from(intro.clientSecret.value ?? '', 'base64').toString('utf8'),
      timeoutMs: parseDuration(intro.timeout ?? '5s') ?? 5_000,
    };
    if (intro && !intro.clientSecret.value)
      throw new Error('oidc: the introspection client secret has no resolved value');
    const cacheMs = parseDuration(intro?.cacheTtl ?? '60s') ?? 60_000;
    const failed = (detail: string) =>
      intro?.onError === 'unauthorized' ? invalid(detail) : unavailable(detail);

    // `span`: the server span of the request that asked (tracing on): provider reads and
    // introspection done for it are its child spans.
    const checkJwt = async (token: string, span: Span | null): Promise<Outcome> => {
      // Another issuer's token is refused before any key lookup: its unknown kid must not
      // spend the JWKS refresh cooldown that a real rotation needs.
      let iss: unknown;
      try {
        iss = decodeJwt(token).iss;
      } catch {
        return invalid('the token is malformed');
      }
      if (iss !== config.issuer) return invalid('the token issuer is not accepted');
      const p = await provider.ready(span);
      if (p === null) return unavailable('the identity provider metadata is not available');
      return verifyJwt(
        token,
        {
          issuer: config.issuer,
          audiences: config.audiences,
          algorithms: config.algorithms,
          key: p.jwks.resolve,
          maxLifetimeMs: lifetimeMs,
        },
        { skewS, claims, source: 'oidc' },
        span,
      );
    };
    const checkOpaque = async (token: string, span: Span | null): Promise<Outcome> => {
      if (client === undefined) return invalid('the token is not a JWT and introspection is not configured');
      const p = await provider.ready(span);
      const endpoint = p?.metadata.introspectionEndpoint;
      if (endpoint == null) return failed('the identity provider has no introspection endpoint available');
      let answer: Record<string, unknown>;
      try {
        answer = await introspect(endpoint, client, token, span);
      } catch (err) {
        deps.log.warn({ issuer: config.issuer, error: (err as Error).message }, 'oidc: introspection failed');
        return failed('the identity provider could not check the token');
      }
      return judgeIntrospection(answer);
    };
    const judgeIntrospection = (a: Record<string, unknown>): Outcome => {
      if (a.active !== true) return invalid('the token is not active');
      if (a.iss !== undefined && a.iss !== config.issuer)
        return invalid('the token claim "iss" is not accepted');
      if (a.aud !== undefined) {
        const aud = Array.isArray(a.aud) ? a.aud : [a.aud];
        if (!aud.some((x) => config.audiences.includes(x as string)))
          return invalid('the token claim "aud" is not accepted');
      }
      if (typeof a.exp === 'number' && (a.exp + skewS) * 1000 <= Date.now())
        return invalid('the token has expired');
      const who = typeof a.sub === 'string' ? a.sub : typeof a.client_id === 'string' ? a.client_id : '';
      const until = typeof a.exp === 'number' ? expiryMs(a as JWTPayload, skewS) : Date.now() + cacheMs;
      return verified(config.issuer, who, a as JWTPayload, 'oidc', claims, until);
    };
    const required = config.scopes ?? [];
    const onRequest = bearerHook({
      header: 'authorization',
      maxBytes: config.maxTokenBytes ?? 8192,
      claims,
      cacheMs,
      cacheEntries: intro?.cacheEntries,
      // A JWS compact token has three dot-separated parts; anything else is opaque.
      check: (token, span) =>
        token.split('.').length === 3 ? checkJwt(token, span) : checkOpaque(token, span),
      authorize:
        required.length === 0
          ? undefined
          : (ctx: RequestContext, v: Verified) => {
              if (hasScopes(v.consumer.claims, required)) return true;
              refuseScope(ctx, required);
              return false;
            },
    });
    const login =
      config.login &&
      loginHook(
        config.login,
        provider,
        { issuer: config.issuer, algorithms: config.algorithms, skewS, scopes: required, hasScopes },
        deps,
        onRequest,
      );
    // With the login on, its hook tells browsers (no bearer token) from API clients.
    const hooks = { onRequest: login || onRequest };
    return { bind: () => hooks };
  },
});

/** The token's scopes: `scope` (RFC 8693/7662, space-separated) or `scp` (an array, some providers). */
function hasScopes(
  claims: Readonly<Record<string, unknown>> | undefined,
  required: readonly string[],
): boolean {
  const scope = claims?.scope;
  const scp = claims?.scp;
  const held = new Set(
    typeof scope === 'string'
      ? scope.split(' ')
      : Array.isArray(scp)
        ? scp.filter((s) => typeof s === 'string')
        : [],
  );
  return required.every((s) => held.has(s));
}
