/**
 * The request headers an h2c upstream gets: the proxied request's (ingress dropped the
 * hop-by-hop ones, the gateway set its own), less any connection-specific header a plugin may
 * have set since (HTTP/2 forbids them, RFC 9113 §8.2.2: node:http2 throws on them, which would
 * take undici's whole session down with the streams of other requests), and `te: trailers`
 * again when the client sent it: the one TE value HTTP/2 allows, and one gRPC servers require
 * (a gRPC status travels in trailers).
 */
const CONNECTION_SPECIFIC = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'upgrade',
  'http2-settings',
  'te',
]);

export function h2cRequestHeaders(
  headers: Record<string, string>,
  teTrailers: boolean,
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name in headers) if (!CONNECTION_SPECIFIC.has(name)) out[name] = headers[name];
  if (teTrailers) out.te = 'trailers';
  return out;
}
