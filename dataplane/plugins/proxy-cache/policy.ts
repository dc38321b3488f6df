/**
 * The RFC 9111 decisions, on http-cache-semantics: what may be stored, for whom, for how long,
 * and how a stored response may be used. Pure functions of the policy and the settings.
 */
import type CachePolicy from 'http-cache-semantics';
import type { Settings } from './settings.ts';

/** Response headers never stored: framing, one request's id, the cache's own status. */
const NOT_STORED = new Set([
  'content-length',
  'transfer-encoding',
  'connection',
  'keep-alive',
  'x-request-id',
  'cache-status',
]);

type Headers = Record<string, string | string[] | undefined>;

/** The request as the policy sees it: the client's headers, the key's URL (one per resource), GET. */
export const policyRequest = (url: string, headers: CachePolicy.Headers): CachePolicy.Request => ({
  url,
  method: 'GET',
  headers,
});

/** The response headers kept in an entry. */
export function storedHeaders(headers: Headers): CachePolicy.Headers {
  const out: CachePolicy.Headers = {};
  for (const name in headers) {
    const v = headers[name];
    if (v !== undefined && !NOT_STORED.has(name)) out[name] = v;
  }
  return out;
}

export type Storability = { store: true; shared: boolean } | { store: false; why: string };

/**
 * Whether a response may be stored, and under which key: RFC 9111 §3 (http-cache-semantics'
 * storable(): method, status, no-store, private, the Authorization rule of §3.5, explicit or
 * heuristic freshness), plus the gateway's own rules: never Vary: * (it matches no request),
 * never a response that sets a cookie (a credential for one client), never a body over
 * maxEntryBytes. On an authenticated route the entry is the caller's own unless the response
 * is explicitly public (and sharePublic).
 */
export function storability(
  policy: CachePolicy,
  headers: Headers,
  authenticated: boolean,
  s: Settings,
): Storability {
  if (!policy.storable()) return { store: false, why: 'uncacheable' };
  const vary = headers.vary;
  if (typeof vary === 'string' && vary.includes('*')) return { store: false, why: 'vary-star' };
  if (headers['set-cookie'] !== undefined) return { store: false, why: 'set-cookie' };
  const length = headers['content-length'];
  if (typeof length === 'string' && Number(length) > s.maxEntryBytes)
    return { store: false, why: 'too-large' };
  if (ttlMs(policy, s) <= 0) return { store: false, why: 'expired' };
  const shared = !authenticated || (s.sharePublic && directive(headers['cache-control'], 'public') !== null);
  return { store: true, shared };
}

/** A Cache-Control directive's value: "" for one without a value, null when absent. */
export function directive(cc: string | string[] | undefined, name: string): string | null {
  if (cc === undefined) return null;
  const text = Array.isArray(cc) ? cc.join(',') : cc;
  for (const part of text.split(',')) {
    const eq = part.indexOf('=');
    const key = (eq === -1 ? part : part.slice(0, eq)).trim().toLowerCase();
    if (key === name)
      return eq === -1
        ? ''
        : part
            .slice(eq + 1)
            .trim()
            .replace(/^"|"$/g, '');
  }
  return null;
}

/** Seconds a stale response may be used for by one of stale-while-revalidate / stale-if-error, within the cap. */
export function staleAllowance(
  policy: CachePolicy,
  name: 'stale-while-revalidate' | 'stale-if-error',
  capS: number,
): number {
  const v = directive(policy.responseHeaders()['cache-control'], name);
  const n = v === null ? 0 : Number(v);
  return Number.isFinite(n) && n > 0 ? Math.min(n, capS) : 0;
}

/** Seconds past freshness (0 while fresh). */
export const staleSeconds = (policy: CachePolicy): number => Math.max(0, policy.age() - policy.maxAge());

/**
 * How long the store keeps an entry: its remaining freshness, then the longest of its
 * (capped) stale-while-revalidate, stale-if-error, and keepForRevalidation when it has a
 * validator to revalidate with.
 */
export function ttlMs(policy: CachePolicy, s: Settings): number {
  const fresh = (policy.maxAge() - policy.age()) * 1000;
  const h = policy.responseHeaders();
  const validator = h.etag !== undefined || h['last-modified'] !== undefined;
  const extra = Math.max(
    staleAllowance(policy, 'stale-while-revalidate', s.maxSwrS) * 1000,
    staleAllowance(policy, 'stale-if-error', s.maxSieS) * 1000,
    validator ? s.keepForRevalidationMs : 0,
  );
  return Math.round(fresh + extra);
}

/** The validators to revalidate a stored response with (RFC 9111 §4.3.1). */
export function conditionalHeaders(policy: CachePolicy): { etag?: string; lastModified?: string } {
  const h = policy.responseHeaders();
  const etag = h.etag;
  const lm = h['last-modified'];
  return {
    ...(typeof etag === 'string' ? { etag } : {}),
    ...(typeof lm === 'string' ? { lastModified: lm } : {}),
  };
}

/** RFC 9110 §13.1.2: the client's If-None-Match matches the stored ETag (weak comparison). */
export function notModifiedFor(
  ifNoneMatch: string | undefined,
  etag: string | string[] | undefined,
): boolean {
  if (ifNoneMatch === undefined || typeof etag !== 'string') return false;
  if (ifNoneMatch.trim() === '*') return true;
  const weak = (t: string) => t.trim().replace(/^W\//, '');
  const mine = weak(etag);
  return ifNoneMatch.split(',').some((t) => weak(t) === mine);
}
