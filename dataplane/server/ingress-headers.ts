/**
 * The gateway owns its headers (ARCHITECTURE §6.1 rule 3). At ingress, before any plugin runs:
 * hop-by-hop headers and every header named in Connection are dropped, client copies of
 * gateway-owned headers are removed (X-Forwarded-* and Forwarded unless the peer is a trusted
 * proxy, X-Sluice-* and X-Forwarded-Client-Cert always), names with "_" that alias a gateway-owned name are refused, and
 * a second Host is refused. What is left becomes the upstream request's headers; the gateway's
 * own headers are set afterwards, so no client header can remove them.
 */
import type { IncomingMessage } from 'node:http';
import { hostName } from '../config/host-name.ts';

const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'proxy-authorization',
  'proxy-authenticate',
  'http2-settings',
  // Node's server has already answered "Expect: 100-continue"; undici refuses to send it on.
  'expect',
]);
const FORWARDING = new Set([
  'x-forwarded-for',
  'x-forwarded-proto',
  'x-forwarded-host',
  'x-forwarded-port',
  'forwarded',
]);

export function isGatewayOwned(lowerName: string): boolean {
  return (
    FORWARDING.has(lowerName) ||
    lowerName === 'x-real-ip' ||
    lowerName.startsWith('x-sluice-') ||
    // Only mtls-auth vouches for a client certificate; a client's own copy is never passed on.
    lowerName === 'x-forwarded-client-cert'
  );
}

export interface IngressHeaders {
  /** Lower-case names; what the upstream will receive (plugins may edit it). */
  headers: Record<string, string>;
  /** Host header, lower-case, without port ('' when absent). */
  host: string;
  /** The Host header as sent (with port), for X-Forwarded-Host. */
  rawHost: string;
  /** Whether the request has a body (Content-Length above 0, or Transfer-Encoding). */
  hasBody: boolean;
  transferEncoding: boolean;
  /** Names sent on more than one line (joined in headers), null when none: auth plugins refuse theirs. */
  repeated: ReadonlySet<string> | null;
  /**
   * The client's TE names "trailers" (it takes response trailers: every gRPC client sends it).
   * TE is hop-by-hop and dropped with the others; this is what is left of it, for an h2c
   * upstream (which gets `te: trailers` again) and for trailers to an HTTP/1.1 client.
   */
  teTrailers: boolean;
}

export function readIngressHeaders(
  req: Pick<IncomingMessage, 'rawHeaders'>,
  trustedPeer: boolean,
): IngressHeaders | { error: string } {
  const raw = req.rawHeaders;
  const headers: Record<string, string> = {};
  let rawHost = '';
  let connection: string | undefined;
  let hasBody = false;
  let transferEncoding = false;
  let repeated: Set<string> | null = null;
  let teTrailers = false;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i].toLowerCase();
    const value = raw[i + 1];
    if (name === 'host') {
      if (rawHost) return { error: 'more than one Host header' };
      rawHost = value;
      continue;
    }
    if (HOP_BY_HOP.has(name)) {
      if (name === 'connection') connection = connection ? `${connection},${value}` : value;
      else if (name === 'transfer-encoding') hasBody = transferEncoding = true;
      else if (name === 'te') teTrailers ||= namesTrailers(value);
      continue;
    }
    if (name === 'content-length' && value !== '0') hasBody = true;
    if (name.includes('_') && isGatewayOwned(name.replaceAll('_', '-')))
      return { error: `header ${JSON.stringify(raw[i])} aliases a header the gateway sets` };
    if (isGatewayOwned(name) && !(trustedPeer && FORWARDING.has(name))) continue;
    const prev = headers[name];
    // One credential, one reading: two Authorization lines are never joined into one value.
    if (prev !== undefined) {
      if (name === 'authorization') return { error: 'more than one Authorization header' };
      repeated ??= new Set();
      repeated.add(name);
    }
    headers[name] = prev === undefined ? value : `${prev}${name === 'cookie' ? '; ' : ', '}${value}`;
  }
  // The headers Connection names are hop-by-hop too (RFC 9110 §7.6.1). Optimization: its usual
  // value, keep-alive (itself hop-by-hop, dropped above), is not split, and a name is deleted only
  // when present (a split and a delete are runtime calls: ~2 thousand instructions a request, 1 %
  // of a plain GET).
  if (connection && connection !== 'keep-alive') {
    for (const token of connection.split(',')) {
      const name = token.trim().toLowerCase();
      if (Object.hasOwn(headers, name)) delete headers[name];
    }
  }
  const host = hostName(rawHost).toLowerCase();
  return { headers, host, rawHost, hasBody, transferEncoding, repeated, teTrailers };
}

/** Whether a TE value lists "trailers" (RFC 9110 §10.1.4: tokens with optional weights, any case). */
function namesTrailers(value: string): boolean {
  for (const part of value.split(',')) {
    const semi = part.indexOf(';');
    if ((semi === -1 ? part : part.slice(0, semi)).trim().toLowerCase() === 'trailers') return true;
  }
  return false;
}

/** Sets X-Forwarded-For/-Proto/-Host and Forwarded, extending trusted incoming values. */
export function setForwardingHeaders(
  headers: Record<string, string>,
  peer: string,
  proto: 'http' | 'https',
  rawHost: string,
): void {
  const ip = peer.startsWith('::ffff:') ? peer.slice(7) : peer;
  const xff = headers['x-forwarded-for'];
  headers['x-forwarded-for'] = xff ? `${xff}, ${ip}` : ip;
  headers['x-forwarded-proto'] ??= proto;
  if (rawHost) headers['x-forwarded-host'] ??= rawHost;
  const node = ip.includes(':') ? `"[${ip}]"` : ip;
  const host =
    rawHost && /^[A-Za-z0-9.\-:[\]]+$/.test(rawHost)
      ? `;host=${rawHost.includes(':') ? `"${rawHost}"` : rawHost}`
      : '';
  const element = `for=${node}${host};proto=${proto}`;
  const fwd = headers.forwarded;
  headers.forwarded = fwd ? `${fwd}, ${element}` : element;
}

/**
 * An h2 request's header lines as HTTP/1.1 would have sent them, for readIngressHeaders: the
 * pseudo-headers go (method, path and scheme are read from the request itself) and :authority
 * stands for Host (RFC 9113 §8.3.1). A Host line beside it must say the same, and is then read once.
 */
export function h2HeaderLines(raw: readonly string[]): { rawHeaders: string[] } {
  const out: string[] = [];
  let authority: string | undefined;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i];
    if (name === ':authority') authority = raw[i + 1];
    else if (name.charCodeAt(0) !== 58 /* ":" */) out.push(name, raw[i + 1]);
  }
  if (authority !== undefined) {
    const host = out.indexOf('host');
    if (host % 2 === 0 && out[host + 1] === authority) out.splice(host, 2);
    out.push('host', authority);
  }
  return { rawHeaders: out };
}
