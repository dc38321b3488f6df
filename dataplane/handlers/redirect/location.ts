/**
 * A redirect's Location, by the rules of Gateway API's HTTPRequestRedirectFilter: the request's
 * URL with the entry's scheme, host name, port and path in place of its own, the query kept.
 * Pure: the handler gives it what it read of the request.
 */
import type { RedirectHandler } from './manifest.ts';

const WELL_KNOWN_PORT = { http: 80, https: 443 } as const;

/** What a Location is made from, read from the request. */
export interface RequestUrl {
  scheme: 'http' | 'https';
  /** The Host header as sent (":authority" on h2), port included; '' when the request had none. */
  host: string;
  /** The normalized path (the one the route matched). */
  path: string;
  /** Without "?"; '' for none. */
  query: string;
}

/**
 * A Host header's name and port: "example.com:8080" → ["example.com", 8080], "[::1]" → ["[::1]",
 * null]; null when it is not a host a Location can carry (a reg-name, an IPv4 or a bracketed
 * IPv6 address, and a port of digits).
 */
export function splitHost(host: string): { name: string; port: number | null } | null {
  const m = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9\-._~%!$&'()*+,;=]+)(?::(\d{1,5})?)?$/.exec(host);
  if (m === null) return null;
  const port = m[2] === undefined ? null : Number(m[2]);
  if (port !== null && (port < 1 || port > 65535)) return null;
  return { name: m[1], port };
}

/**
 * The entry's path rule, compiled for its route: the Location's path from the request's.
 * `prefix`: the route's Prefix match (normalized, no trailing "/" but the root's), for
 * ReplacePrefixMatch; the router matched the request on segment boundaries under it.
 */
export function pathRule(entry: RedirectHandler, prefix: string): (path: string) => string {
  const p = entry.path;
  if (p === undefined) return (path) => path;
  if (p.type === 'ReplaceFullPath') return () => p.value;
  // "/new/" and "/new" replace alike; what the prefix did not cover ('' or "/…") follows.
  const base = p.value.replace(/\/+$/, '');
  const covered = prefix === '/' ? 0 : prefix.length;
  return (path) => base + path.slice(covered) || '/';
}

/**
 * The Location for one request; null when the request's Host is not one a Location can carry,
 * or when it has none and the entry gives no hostname.
 */
export function locationOf(
  entry: RedirectHandler,
  path: (p: string) => string,
  req: RequestUrl,
): string | null {
  const host = req.host === '' ? null : splitHost(req.host);
  if (req.host !== '' && host === null) return null;
  if (host === null && entry.hostname === undefined) return null;
  const scheme = entry.scheme ?? req.scheme;
  // The spec's order: the port given; else the well-known port of a scheme given; else the
  // listener's port, which is the one the client put in Host (none there: the request scheme's).
  const port =
    entry.port ?? (entry.scheme !== undefined ? WELL_KNOWN_PORT[entry.scheme] : host?.port) ?? null;
  const name = entry.hostname ?? host!.name;
  const portPart = port === null || port === WELL_KNOWN_PORT[scheme] ? '' : `:${port}`;
  const query = req.query === '' ? '' : `?${req.query}`;
  return `${scheme}://${name}${portPart}${path(req.path)}${query}`;
}
