/**
 * jwt: verifies a bearer token (jose) against its issuer's configuration. The issuer is read
 * from the unverified payload only to pick the configuration; everything else is checked by the
 * signature verification: the algorithm must be one the issuer allows (never the token's own
 * choice: "none" and HS/RS confusion fail here), `iss`, `aud` and `exp` are required, exp and
 * nbf get a bounded clock skew. The caller becomes `<iss>#<sub>`. Any failure is 401 with
 * WWW-Authenticate and a problem that names the kind of failure, never key material; a
 * malformed token is a 401, never a 500.
 */
import { HEADER_VALUE } from '../../config/http-grammar.ts';
import { createPublicKey, createSecretKey } from 'node:crypto';
import { decodeJwt, errors, jwtVerify, type JWTVerifyGetKey } from 'jose';
import { parseDuration } from '../../config/duration.ts';
import type { JwtConfig } from './manifest.ts';
import { answerProblem, refusedRepeated } from '../../pipeline/answer.ts';
import type { Consumer, RequestContext } from '../../pipeline/context.ts';
import type { RuntimeDeps } from '../../pipeline/route.ts';
import { definePlugin } from '../types.ts';
import { manifest } from './manifest.ts';
import { remoteJwks } from './jwks.ts';

type Issuer = JwtConfig['issuers'][number];
type KeyResolver = JWTVerifyGetKey;
interface Verified {
  consumer: Consumer;
  headers: [string, string][];
  until: number;
}

/** Verified tokens kept per plugin instance, and for how long at most. */
const CACHE_ENTRIES = 10_000;
const CACHE_MS = 60_000;
const challenge = (error: string) => ({ 'www-authenticate': `Bearer realm="sluice", error="${error}"` });

export default definePlugin(manifest, {
  create(config, deps) {
    const issuers = new Map(config.issuers.map((i) => [i.issuer, compileIssuer(i, deps)]));
    const header = (config.header ?? 'authorization').toLowerCase();
    const bearer = header === 'authorization';
    const headerNames = [header];
    const skew = Math.floor((parseDuration(config.clockSkew ?? '30s') ?? 30_000) / 1000);
    const maxBytes = config.maxTokenBytes ?? 8192;
    const claims = (config.claimsToHeaders ?? []).map((c) => ({
      claim: c.claim,
      header: c.header.toLowerCase(),
    }));
    // Verified tokens, by their exact text: a client reuses its token for many requests, and a
    // signature check costs far more than the rest of the chain. An entry lives until the
    // token's exp (less the skew) and at most CACHE_MS, so a key withdrawn from a JWKS stops
    // working within a minute; a new snapshot starts with an empty cache.
    const verified = new Map<string, Verified>();
    // Optimization: the header last verified on each connection, compared before any parsing. A
    // keep-alive client sends the same token on every request; comparing it with the last one is
    // ~20x cheaper than hashing a fresh ~600-byte string for the Map (measured under load: ~1 µs
    // a request, with the Bearer regex). Only an exact match of the whole header value counts.
    const lastOnConnection = new WeakMap<object, { raw: string; hit: Verified }>();
    const accept = (ctx: RequestContext, consumer: Consumer, headers: [string, string][]) => {
      ctx.consumer = consumer;
      for (const [h, v] of headers) ctx.headers[h] = v;
    };
    const hooks = {
      onRequest(ctx: RequestContext) {
        for (const c of claims) delete ctx.headers[c.header];
        if (refusedRepeated(ctx, headerNames)) return;
        const raw = ctx.headers[header];
        if (raw === undefined)
          return refuse(ctx, 'SLC_ERR_CREDENTIALS_MISSING', 'a bearer token is required', 'invalid_request');
        const last = lastOnConnection.get(ctx.req.socket);
        if (last !== undefined && last.raw === raw && last.hit.until > Date.now())
          return accept(ctx, last.hit.consumer, last.hit.headers);
        const token = bearer ? /^Bearer +(\S+)$/i.exec(raw)?.[1] : raw.trim();
        if (!token)
          return refuse(
            ctx,
            'SLC_ERR_CREDENTIALS_INVALID',
            'the Authorization header is not "Bearer <token>"',
          );
        if (token.length > maxBytes)
          return refuse(ctx, 'SLC_ERR_CREDENTIALS_INVALID', 'the token is too large');
        const hit = verified.get(token);
        if (hit !== undefined) {
          if (hit.until > Date.now()) {
            lastOnConnection.set(ctx.req.socket, { raw, hit });
            return accept(ctx, hit.consumer, hit.headers);
          }
          verified.delete(token);
        }
        let iss: unknown;
        try {
          iss = decodeJwt(token).iss;
        } catch {
          return refuse(ctx, 'SLC_ERR_CREDENTIALS_INVALID', 'the token is malformed');
        }
        const issuer = typeof iss === 'string' ? issuers.get(iss) : undefined;
        if (issuer === undefined)
          return refuse(ctx, 'SLC_ERR_CREDENTIALS_INVALID', 'the token issuer is not accepted');
        return jwtVerify(token, issuer.key, {
          issuer: issuer.config.issuer,
          audience: issuer.config.audiences,
          algorithms: issuer.config.algorithms,
          clockTolerance: skew,
          requiredClaims: ['iss', 'aud', 'exp'],
        }).then(
          ({ payload }) => {
            if (issuer.maxLifetimeMs > 0) {
              const from = typeof payload.iat === 'number' ? payload.iat : Date.now() / 1000;
              if (((payload.exp as number) - from) * 1000 > issuer.maxLifetimeMs)
                return refuse(
                  ctx,
                  'SLC_ERR_CREDENTIALS_INVALID',
                  'the token lives longer than the issuer allows',
                );
            }
            const sub = typeof payload.sub === 'string' ? payload.sub : '';
            const consumer: Consumer = {
              id: `${issuer.config.issuer}#${sub}`,
              credentialId: sub,
              source: 'jwt',
              claims: payload,
            };
            const headers: [string, string][] = [];
            for (const c of claims) {
              const v = payload[c.claim];
              const text =
                typeof v === 'string'
                  ? v
                  : typeof v === 'number' || typeof v === 'boolean'
                    ? String(v)
                    : undefined;
              if (text !== undefined && HEADER_VALUE.test(text)) headers.push([c.header, text]);
            }
            accept(ctx, consumer, headers);
            // Not cached while not yet valid (nbf within the skew): it is checked again next time.
            if (typeof payload.nbf === 'number' && payload.nbf * 1000 > Date.now()) return;
            if (verified.size >= CACHE_ENTRIES) verified.delete(verified.keys().next().value!);
            const until = Math.min((payload.exp as number) * 1000 - skew * 1000, Date.now() + CACHE_MS);
            const entry = { consumer, headers, until };
            verified.set(token, entry);
            lastOnConnection.set(ctx.req.socket, { raw, hit: entry });
          },
          (err) => refuse(ctx, 'SLC_ERR_CREDENTIALS_INVALID', reasonOf(err)),
        );
      },
    };
    return { bind: () => hooks };
  },
});

function refuse(
  ctx: RequestContext,
  code: 'SLC_ERR_CREDENTIALS_MISSING' | 'SLC_ERR_CREDENTIALS_INVALID',
  detail: string,
  error = 'invalid_token',
): void {
  answerProblem(ctx, code, { detail, headers: challenge(error) });
}

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

function compileIssuer(
  config: Issuer,
  deps: RuntimeDeps,
): { config: Issuer; key: KeyResolver; maxLifetimeMs: number } {
  const statics = (config.keys ?? []).map((k) => {
    if (!k.value) throw new Error(`jwt: a key of issuer ${config.issuer} has no resolved value`);
    const bytes = Buffer.from(k.value, 'base64');
    const text = bytes.toString('utf8');
    const key = text.includes('-----BEGIN') ? createPublicKey(text) : createSecretKey(bytes);
    return { kid: k.kid, key };
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
  const key: KeyResolver = async (header, token) => {
    const byKid = statics.find((s) => s.kid !== undefined && s.kid === header.kid);
    if (byKid) return byKid.key;
    // A static key without kid, when it is the only one, verifies tokens the JWKS (if any) cannot.
    const unnamed = statics.filter((s) => s.kid === undefined);
    if (unnamed.length === 1 && (header.kid === undefined || remote === null)) return unnamed[0].key;
    if (remote) return remote.resolve(header, token);
    throw new errors.JWKSNoMatchingKey();
  };
  const maxLifetimeMs = config.maxLifetime ? (parseDuration(config.maxLifetime) ?? 0) : 0;
  return { config, key, maxLifetimeMs };
}
