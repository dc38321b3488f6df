/**
 * The access-log line: one JSON object per request, refused ones included. It carries what an
 * SRE asks of a request (who, what, where it went, how it ended, how long it took, what the
 * plugins decided) and never a credential: headers are not logged at all, the query keeps its
 * parameter names with every value redacted (a key in `?apikey=` is a secret), and a refused
 * request's raw target loses its query and any userinfo before it is bounded.
 */

/** The value every redacted query parameter shows. */
export const REDACTED = '[redacted]';

/**
 * `a=1&apikey=s&tok` → `a=[redacted]&apikey=[redacted]&[redacted]`: names only, values never,
 * and a part without `=` is all value (a bare token). Empty: undefined.
 */
export function redactQuery(query: string): string | undefined {
  if (query === '') return undefined;
  let out = '';
  for (const part of query.split('&')) {
    if (part === '') continue;
    const eq = part.indexOf('=');
    out += `${out === '' ? '' : '&'}${eq === -1 ? '' : `${part.slice(0, Math.min(eq, 64))}=`}${REDACTED}`;
  }
  return out === '' ? undefined : out;
}

/**
 * A refused request's target as the client sent it, with nothing that could hold a secret:
 * the query and the fragment cut, `user:password@` of an absolute-form target removed, bounded.
 */
export function safeTarget(raw: string | undefined): string | undefined {
  if (raw === undefined) return undefined;
  let t = raw;
  const q = t.search(/[?#]/);
  if (q !== -1) t = t.slice(0, q);
  t = t.replace(/^([a-z][a-z0-9+.-]*:\/\/)[^/@]*@/i, '$1');
  return t.slice(0, 256);
}

/** Milliseconds between two hrtime stamps, three decimals. */
export function msBetween(startNs: bigint, endNs: bigint): number {
  return Math.round(Number(endNs - startNs) / 1e3) / 1e3;
}
