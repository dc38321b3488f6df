/**
 * The client's headers a handler's own backend calls carry (an aggregate's GETs, a SOAP POST):
 * all of them after the plugins (a transformer's X-Gateway-Version, Authorization), except
 * those of the client's body (the call's body is the handler's) and those that would let a
 * backend answer something other than one whole, plain representation (compressed, partial,
 * 304), plus the handler's own (content type, accept), which win.
 */
const NOT_FORWARDED = new Set([
  'content-length',
  'content-type',
  'content-encoding',
  'transfer-encoding',
  'expect',
  'accept',
  'accept-encoding',
  'range',
  'if-range',
  'if-match',
  'if-none-match',
  'if-modified-since',
  'if-unmodified-since',
]);

export function callHeaders(
  headers: Record<string, string>,
  own: Record<string, string>,
  drop?: ReadonlySet<string>,
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name in headers) if (!NOT_FORWARDED.has(name) && !drop?.has(name)) out[name] = headers[name];
  return Object.assign(out, own);
}
