/**
 * A bearer credential read from a request, checked once and remembered: the part every token
 * plugin shares (jwt, oidc). The token is read from Authorization ("Bearer <token>") or another
 * header, its size capped, then checked by the plugin's `check` (signature, introspection…).
 * What passed is kept by its exact text until its expiry and at most `cacheMs`, in at most
 * `cacheEntries` entries; concurrent checks of one token share one promise. A refusal is a
 * 401 (or the plugin's 503) with WWW-Authenticate; a malformed token is never a 500.
 */
import { answerProblem, refusedRepeated } from '../pipeline/answer.ts';
import type { Span } from '../observability/tracing.ts';
import type { Consumer, RequestContext } from '../pipeline/context.ts';
import type { ClaimHeader } from './jwt-verify.ts';

export interface Verified {
  consumer: Consumer;
  headers: [string, string][];
  /** Cacheable until (ms since the epoch); 0: check again next time. */
  until: number;
}

export type RefusalCode =
  | 'SLC_ERR_CREDENTIALS_MISSING'
  | 'SLC_ERR_CREDENTIALS_INVALID'
  | 'SLC_ERR_AUTH_UNAVAILABLE';
export interface Refusal {
  refuse: RefusalCode;
  detail: string;
}
export type Outcome = Verified | Refusal;

export interface BearerOptions {
  /** Lower-case header name; "authorization" reads "Bearer <token>". */
  header: string;
  maxBytes: number;
  claims: readonly ClaimHeader[];
  /**
   * `span`: the server span of the request that asked first (tracing on, else null): what the
   * check fetches for it (keys, introspection) are its child spans; requests that share the
   * check (coalesced) have none.
   */
  check: (token: string, span: Span | null) => Outcome | Promise<Outcome>;
  /** After a token passed (fresh or remembered): false if it answered the request itself (e.g. 403). */
  authorize?: (ctx: RequestContext, v: Verified) => boolean;
  cacheMs?: number;
  cacheEntries?: number;
}

const challenge = (error: string) => ({ 'www-authenticate': `Bearer realm="sluice", error="${error}"` });

export function bearerHook(o: BearerOptions): (ctx: RequestContext) => void | Promise<void> {
  const { header, maxBytes, claims, check, authorize } = o;
  const cacheMs = o.cacheMs ?? 60_000;
  const cacheEntries = o.cacheEntries ?? 10_000;
  const bearer = header === 'authorization';
  const headerNames = [header];
  // Verified tokens, by their exact text: a client reuses its token for many requests, and a
  // signature check (or an introspection call) costs far more than the rest of the chain. A
  // new snapshot starts with an empty cache.
  const verified = new Map<string, Verified>();
  const inflight = new Map<string, Promise<Outcome>>();
  // Optimization: the header last verified on each connection, compared before any parsing. A
  // keep-alive client sends the same token on every request; comparing it with the last one is
  // ~20x cheaper than hashing a fresh ~600-byte string for the Map (measured under load: ~1 µs
  // a request, with the Bearer regex). Only an exact match of the whole header value counts.
  const lastOnConnection = new WeakMap<object, { raw: string; hit: Verified }>();
  const accept = (ctx: RequestContext, v: Verified) => {
    if (authorize !== undefined && !authorize(ctx, v)) return;
    ctx.consumer = v.consumer;
    for (const [h, value] of v.headers) ctx.headers[h] = value;
  };
  const settle = (ctx: RequestContext, token: string, raw: string, out: Outcome) => {
    if ('refuse' in out) return refuse(ctx, out.refuse, out.detail);
    if (out.until > Date.now()) {
      if (!verified.has(token)) {
        if (verified.size >= cacheEntries) verified.delete(verified.keys().next().value!);
        verified.set(token, { ...out, until: Math.min(out.until, Date.now() + cacheMs) });
      }
      lastOnConnection.set(ctx.req.socket, { raw, hit: verified.get(token)! });
    }
    accept(ctx, out);
  };
  return (ctx) => {
    for (const c of claims) delete ctx.headers[c.header];
    if (refusedRepeated(ctx, headerNames)) return;
    const raw = ctx.headers[header];
    if (raw === undefined) return refuse(ctx, 'SLC_ERR_CREDENTIALS_MISSING', 'a bearer token is required');
    const last = lastOnConnection.get(ctx.req.socket);
    if (last !== undefined && last.raw === raw && last.hit.until > Date.now()) return accept(ctx, last.hit);
    const token = bearer ? /^Bearer +(\S+)$/i.exec(raw)?.[1] : raw.trim();
    if (!token)
      return refuse(ctx, 'SLC_ERR_CREDENTIALS_INVALID', 'the Authorization header is not "Bearer <token>"');
    if (token.length > maxBytes) return refuse(ctx, 'SLC_ERR_CREDENTIALS_INVALID', 'the token is too large');
    const hit = verified.get(token);
    if (hit !== undefined) {
      if (hit.until > Date.now()) {
        lastOnConnection.set(ctx.req.socket, { raw, hit });
        return accept(ctx, hit);
      }
      verified.delete(token);
    }
    let pending = inflight.get(token);
    if (pending === undefined) {
      const out = check(token, ctx.span);
      if (!(out instanceof Promise)) return settle(ctx, token, raw, out);
      pending = out.finally(() => inflight.delete(token));
      inflight.set(token, pending);
    }
    return pending.then((out) => settle(ctx, token, raw, out));
  };
}

/** A 401 (or 503) problem with the Bearer challenge (RFC 6750). */
export function refuse(ctx: RequestContext, code: RefusalCode, detail: string): void {
  const error = code === 'SLC_ERR_CREDENTIALS_MISSING' ? 'invalid_request' : 'invalid_token';
  answerProblem(ctx, code, { detail, headers: code === 'SLC_ERR_AUTH_UNAVAILABLE' ? {} : challenge(error) });
}

/** 403 for a valid token without the scopes the route requires (RFC 6750 §3.1). */
export function refuseScope(ctx: RequestContext, scopes: readonly string[]): void {
  answerProblem(ctx, 'SLC_ERR_INSUFFICIENT_SCOPE', {
    detail: `the token lacks a required scope (${scopes.join(' ')})`,
    headers: {
      'www-authenticate': `Bearer realm="sluice", error="insufficient_scope", scope="${scopes.join(' ')}"`,
    },
  });
}
