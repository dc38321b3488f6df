/**
 * jwt: verifies a bearer token (jose) against its issuer's configuration. The issuer is read
 * from the unverified payload only to pick the configuration; everything else is checked by the
 * signature verification (jwt-verify.ts, shared with oidc). The caller becomes `<iss>#<sub>`. Any
 * failure is 401 with WWW-Authenticate and a problem that names the kind of failure, never key
 * material; a malformed token is a 401, never a 500. Reading, caching and coalescing: ../bearer.ts.
 */
import type { KeyObject } from 'node:crypto';
import { decodeJwt, errors } from 'jose';
import type { RuntimeDeps } from '../../pipeline/route.ts';
import { definePlugin } from '../types.ts';
import { bearerHook } from '../bearer.ts';
import { remoteJwks } from '../jwks.ts';
import { parseDuration } from '../../config/duration.ts';
import type { JwtConfig } from './manifest.ts';
import { manifest, staticKey } from './manifest.ts';
import {
  claimHeaders,
  type IssuerRules,
  invalid,
  type KeyResolver,
  maxLifetimeMs,
  skewSeconds,
  type VerifyKey,
  verifyJwt,
} from '../jwt-verify.ts';

type Issuer = JwtConfig['issuers'][number];

export default definePlugin(manifest, {
  create(config, deps) {
    const issuers = new Map(config.issuers.map((i) => [i.issuer, compileIssuer(i, deps)]));
    const skewS = skewSeconds(config.clockSkew);
    const claims = claimHeaders(config.claimsToHeaders);
    const onRequest = bearerHook({
      header: (config.header ?? 'authorization').toLowerCase(),
      maxBytes: config.maxTokenBytes ?? 8192,
      claims,
      check: (token, span) => {
        let iss: unknown;
        try {
          iss = decodeJwt(token).iss;
        } catch {
          return invalid('the token is malformed');
        }
        const rules = typeof iss === 'string' ? issuers.get(iss) : undefined;
        if (rules === undefined) return invalid('the token issuer is not accepted');
        return verifyJwt(token, rules, { skewS, claims, source: 'jwt' }, span);
      },
    });
    const hooks = { onRequest };
    return { bind: () => hooks };
  },
});

/** Whether a key is of the type an algorithm verifies with (jose refuses the others). */
function fits(key: KeyObject, alg: string | undefined): boolean {
  const family = alg?.slice(0, 2);
  if (family === 'HS') return key.type === 'secret';
  const type = key.asymmetricKeyType;
  if (family === 'RS') return type === 'rsa';
  if (family === 'PS') return type === 'rsa' || type === 'rsa-pss';
  if (family === 'ES') return type === 'ec';
  if (alg === 'EdDSA') return type === 'ed25519' || type === 'ed448';
  return false;
}

/**
 * What jose's local JWKS throws when several keys fit: JWKSMultipleMatchingKeys, iterable over
 * them (verifyJwt tries each). Here the static keys, then the JWKS's candidates (one, or its own several).
 */
function severalKeys(
  keys: KeyObject[],
  jwks: (() => ReturnType<KeyResolver>) | null,
): errors.JWKSMultipleMatchingKeys {
  const error = new errors.JWKSMultipleMatchingKeys();
  Object.defineProperty(error, Symbol.asyncIterator, {
    value: async function* () {
      yield* keys;
      if (jwks === null) return;
      try {
        yield await jwks();
      } catch (err) {
        if (err instanceof errors.JWKSMultipleMatchingKeys) yield* err as unknown as AsyncIterable<VerifyKey>;
      }
    },
  });
  return error;
}

function compileIssuer(config: Issuer, deps: RuntimeDeps): IssuerRules {
  const statics = (config.keys ?? []).map((k) => {
    if (!k.value) throw new Error(`jwt: a key of issuer ${config.issuer} has no resolved value`);
    return { kid: k.kid, key: staticKey(k.value) };
  });
  const remote = config.jwksUri
    ? remoteJwks(config.jwksUri, {
        maxAgeMs: config.jwksRefresh === undefined ? undefined : parseDuration(config.jwksRefresh),
        onFetch: (ok, error) =>
          ok
            ? undefined
            : deps.log.warn(
                { issuer: config.issuer, error },
                'jwt: JWKS fetch failed; keeping the last good keys',
              ),
      })
    : null;
  const key: KeyResolver = async (header, token, parent) => {
    const byKid = statics.find((s) => s.kid !== undefined && s.kid === header.kid);
    if (byKid) return byKid.key;
    // The static keys a token may be verified with: every one for a token naming no kid when
    // there is no JWKS; else those without a kid (tried for any kid), and with a JWKS only for a
    // token naming none (a named kid is the JWKS's). Each must fit the token's algorithm.
    const pool =
      header.kid === undefined && remote === null
        ? statics
        : header.kid === undefined || remote === null
          ? statics.filter((s) => s.kid === undefined)
          : [];
    const fit = pool.filter((s) => fits(s.key, header.alg));
    if (fit.length === 1 && remote === null) return fit[0].key;
    if (fit.length === 0) {
      if (remote) return remote.resolve(header, token, parent);
      throw new errors.JWKSNoMatchingKey();
    }
    // Several (or one, then the JWKS): verifyJwt tries each in turn, the JWKS's keys last.
    throw severalKeys(
      fit.map((s) => s.key),
      remote && (() => remote.resolve(header, token, parent)),
    );
  };
  return {
    issuer: config.issuer,
    audiences: config.audiences,
    algorithms: config.algorithms,
    key,
    maxLifetimeMs: maxLifetimeMs(config.maxLifetime),
  };
}
