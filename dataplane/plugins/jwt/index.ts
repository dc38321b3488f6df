/**
 * jwt: verifies a bearer token (jose) against its issuer's configuration. The issuer is read
 * from the unverified payload only to pick the configuration; everything else is checked by the
 * signature verification (jwt-verify.ts, shared with oidc). The caller becomes `<iss>#<sub>`. Any
 * failure is 401 with WWW-Authenticate and a problem that names the kind of failure, never key
 * material; a malformed token is a 401, never a 500. Reading, caching and coalescing: ../bearer.ts.
 */
import { decodeJwt, errors } from 'jose';
import type { RuntimeDeps } from '../../pipeline/route.ts';
import { definePlugin } from '../types.ts';
import { bearerHook } from '../bearer.ts';
import { remoteJwks } from '../jwks.ts';
import type { JwtConfig } from './manifest.ts';
import { manifest, staticKey } from './manifest.ts';
import {
  claimHeaders,
  type IssuerRules,
  invalid,
  type KeyResolver,
  maxLifetimeMs,
  skewSeconds,
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

function compileIssuer(config: Issuer, deps: RuntimeDeps): IssuerRules {
  const statics = (config.keys ?? []).map((k) => {
    if (!k.value) throw new Error(`jwt: a key of issuer ${config.issuer} has no resolved value`);
    return { kid: k.kid, key: staticKey(k.value) };
  });
  const remote = config.jwksUri
    ? remoteJwks(config.jwksUri, {
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
    // A static key without kid, when it is the only one, verifies tokens the JWKS (if any) cannot.
    const unnamed = statics.filter((s) => s.kid === undefined);
    if (unnamed.length === 1 && (header.kid === undefined || remote === null)) return unnamed[0].key;
    if (remote) return remote.resolve(header, token, parent);
    throw new errors.JWKSNoMatchingKey();
  };
  return {
    issuer: config.issuer,
    audiences: config.audiences,
    algorithms: config.algorithms,
    key,
    maxLifetimeMs: maxLifetimeMs(config.maxLifetime),
  };
}
