/**
 * Cache-Status (RFC 9211) as this gateway writes it, one member named "sluice":
 *   sluice; hit; ttl=42                                  fresh, from the cache
 *   sluice; hit; ttl=-3; detail=stale-while-revalidate   stale, served while one request revalidates
 *   sluice; fwd=miss; stored                             nothing stored; the response is now
 *   sluice; fwd=vary-miss | fwd=request                  an entry, not for this request's Vary / directives
 *   sluice; fwd=stale; fwd-status=304                    stale, revalidated (the stored body is sent)
 *   sluice; fwd=stale; fwd-status=503; detail=stale-if-error   upstream failed: the stale entry is sent
 *   sluice; fwd=method                                   a method the cache does not answer (POST may be stored)
 *   sluice; fwd=bypass; detail=store-unavailable         the store did not answer: straight to the upstream
 * An upstream's own Cache-Status is kept, ours appended (the member nearest the client is last).
 */
export type Forward = 'miss' | 'vary-miss' | 'request' | 'stale' | 'method' | 'bypass';

export const hitStatus = (ttlS: number): string => `sluice; hit; ttl=${Math.floor(ttlS)}`;

export const staleHitStatus = (staleS: number): string =>
  `sluice; hit; ttl=${-Math.ceil(staleS)}; detail=stale-while-revalidate`;

export function fwdStatus(
  fwd: Forward,
  opts: { status?: number; stored?: boolean; detail?: string } = {},
): string {
  let s = `sluice; fwd=${fwd}`;
  if (opts.status !== undefined) s += `; fwd-status=${opts.status}`;
  if (opts.stored) s += '; stored';
  if (opts.detail !== undefined) s += `; detail=${opts.detail}`;
  return s;
}

/** Appends our member to what the upstream sent, if anything. */
export function appendStatus(headers: Record<string, string | string[]>, member: string): void {
  const prev = headers['cache-status'];
  headers['cache-status'] =
    prev === undefined ? member : `${Array.isArray(prev) ? prev.join(', ') : prev}, ${member}`;
}
