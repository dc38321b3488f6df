/**
 * The checks of a JWT, one copy for every plugin that verifies one (jwt, oidc): the signature
 * with the issuer's key, the algorithm one the issuer allows (never the token's own choice:
 * "none" and HS/RS confusion fail here), `iss`, `aud` and `exp` required, exp and nbf with a
 * bounded clock skew, an optional maximum lifetime. The caller becomes `<iss>#<sub>`.
 */
import { errors, type JWTPayload, type JWTVerifyGetKey, type JWTVerifyOptions, jwtVerify } from 'jose';
import type { Span } from '../observability/tracing.ts';
import { HEADER_VALUE } from '../config/http-grammar.ts';
import type { Consumer } from '../pipeline/context.ts';
import type { Outcome, Verified } from './bearer.ts';
import { parseDuration } from '../config/duration.ts';

/** A jose key resolver that may fetch keys for a request: `parent` is its server span (tracing on). */
export type KeyResolver = (
  header: Parameters<JWTVerifyGetKey>[0],
  token: Parameters<JWTVerifyGetKey>[1],
  parent?: Span | null,
) => ReturnType<JWTVerifyGetKey>;

export interface IssuerRules {
  issuer: string;
  audiences: string[];
  algorithms: string[];
  key: KeyResolver;
  /** 0: no limit on exp - iat. */
  maxLifetimeMs: number;
}

export interface ClaimHeader {
  claim: string;
  header: string;
}

export function verifyJwt(
  token: string,
  rules: IssuerRules,
  opts: { skewS: number; claims: readonly ClaimHeader[]; source: string },
  parent: Span | null = null,
): Promise<Outcome> {
  // Optimization: the span reaches the resolver through a closure only when tracing is on.
  const key: JWTVerifyGetKey = parent === null ? rules.key : (h, t) => rules.key(h, t, parent);
  return verifyWithAnyKey(token, key, {
    issuer: rules.issuer,
    audience: rules.audiences,
    algorithms: rules.algorithms,
    clockTolerance: opts.skewS,
    requiredClaims: ['iss', 'aud', 'exp'],
  }).then(
    ({ payload }): Outcome => {
      if (rules.maxLifetimeMs > 0) {
        const from = typeof payload.iat === 'number' ? payload.iat : Date.now() / 1000;
        if (((payload.exp as number) - from) * 1000 > rules.maxLifetimeMs)
          return invalid('the token lives longer than the issuer allows');
      }
      const sub = typeof payload.sub === 'string' ? payload.sub : '';
      // Not cached while not yet valid (nbf within the skew): it is checked again next time.
      const early = typeof payload.nbf === 'number' && payload.nbf * 1000 > Date.now();
      return verified(
        rules.issuer,
        sub,
        payload,
        opts.source,
        opts.claims,
        early ? 0 : expiryMs(payload, opts.skewS),
      );
    },
    (err) => invalid(reasonOf(err)),
  );
}

/** A key jose verifies with (what a resolver returns). */
export type VerifyKey = Awaited<ReturnType<JWTVerifyGetKey>>;

/** At most this many keys are tried for one token that names none (a forged token costs that many verifications). */
export const MAX_KEYS_TRIED = 32;

/**
 * jwtVerify, trying each candidate key when several fit a token that names no `kid` (a JWKS or
 * static keys: the resolver throws JWKSMultipleMatchingKeys, iterable over them), as Envoy's
 * jwt_authn does: the first whose signature verifies decides (its claims are then checked); a
 * key of another type for the algorithm is skipped; none verifying is a bad signature.
 */
async function verifyWithAnyKey(token: string, key: JWTVerifyGetKey, options: JWTVerifyOptions) {
  try {
    return await jwtVerify(token, key, options);
  } catch (err) {
    if (!(err instanceof errors.JWKSMultipleMatchingKeys)) throw err;
    let tried = 0;
    for await (const candidate of err as unknown as AsyncIterable<VerifyKey>) {
      if (++tried > MAX_KEYS_TRIED) break;
      try {
        return await jwtVerify(token, candidate, options);
      } catch (inner) {
        if (inner instanceof errors.JWSSignatureVerificationFailed || inner instanceof TypeError) continue;
        throw inner;
      }
    }
    throw new errors.JWSSignatureVerificationFailed();
  }
}

/** A verified caller: `<iss>#<sub>`, its claims, the claim headers for the upstream; cacheable until `until` (0: not). */
export function verified(
  iss: string,
  sub: string,
  claims: JWTPayload,
  source: string,
  claimHeaders: readonly ClaimHeader[],
  until: number,
): Verified {
  const consumer: Consumer = { id: `${iss}#${sub}`, credentialId: sub, source, claims };
  const headers: [string, string][] = [];
  for (const c of claimHeaders) {
    const v = claims[c.claim];
    const text =
      typeof v === 'string' ? v : typeof v === 'number' || typeof v === 'boolean' ? String(v) : undefined;
    if (text !== undefined && HEADER_VALUE.test(text)) headers.push([c.header, text]);
  }
  return { consumer, headers, until };
}

/** The token's exp (ms) less the skew. */
export const expiryMs = (payload: JWTPayload, skewS: number): number =>
  ((payload.exp as number) - skewS) * 1000;

export const invalid = (detail: string): Outcome => ({ refuse: 'SLC_ERR_CREDENTIALS_INVALID', detail });

/** What went wrong, in words that hold no key material. */
function reasonOf(err: unknown): string {
  if (err instanceof errors.JWTExpired) return 'the token has expired';
  if (err instanceof errors.JWTClaimValidationFailed)
    return `the token claim ${JSON.stringify(err.claim)} is not accepted`;
  if (err instanceof errors.JOSEAlgNotAllowed) return 'the token algorithm is not accepted for this issuer';
  if (err instanceof errors.JWSSignatureVerificationFailed) return 'the token signature is not valid';
  if (err instanceof errors.JWKSNoMatchingKey) return 'no key of the issuer matches the token';
  return 'the token is not valid';
}

/** The config's settings, read once per plugin instance. */
export const skewSeconds = (clockSkew: string | undefined): number =>
  Math.floor((parseDuration(clockSkew ?? '30s') ?? 30_000) / 1000);

export const claimHeaders = (c: readonly ClaimHeader[] | undefined): ClaimHeader[] =>
  (c ?? []).map((x) => ({ claim: x.claim, header: x.header.toLowerCase() }));

export const maxLifetimeMs = (maxLifetime: string | undefined): number =>
  maxLifetime ? (parseDuration(maxLifetime) ?? 0) : 0;
