/**
 * What a cors policy answers, as pure functions of the config and the request's CORS headers
 * (Fetch standard §3.2): the preflight's answer (its headers, or why it is refused) and the
 * headers of an actual response. Every constant header value is joined once, when the snapshot
 * is built; per request there is one origin check and, for a preflight, one look at each
 * requested header.
 */
import { TOKEN } from '../../config/http-grammar.ts';
import { compileOrigins } from '../../config/origins.ts';
import { anchoredRegex } from '../../config/regex.ts';
import type { CorsConfig } from './manifest.ts';

export const DEFAULT_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'];
/** Vary of an actual response: the response depends on the Origin (a cache must not give one origin's answer to another). */
export const ACTUAL_VARY = 'Origin';

export type PreflightAnswer =
  | { allowed: true; headers: Record<string, string> }
  | { allowed: false; reason: string; vary: string };

export interface CorsPolicy {
  /** The Access-Control-Allow-Origin for this Origin: the origin itself, `*`, or null (not allowed: no CORS headers). */
  allowOrigin(origin: string): string | null;
  credentials: boolean;
  /** Access-Control-Expose-Headers, or null. */
  expose: string | null;
  preflight(
    origin: string,
    method: string,
    requestHeaders: string | undefined,
    privateNetwork: boolean,
  ): PreflightAnswer;
}

export function compilePolicy(config: CorsConfig): CorsPolicy {
  const origins = compileOrigins(config.origins ?? [], (config.originRegex ?? []).map(anchoredRegex));
  const credentials = config.credentials === true;
  // `*` is answered as `*` only without credentials (the checks refuse the other case; this is the second lock).
  const star = origins.any && !credentials;
  const methods = new Set(config.methods ?? DEFAULT_METHODS);
  // "*": any method, answered with the one asked for (which a browser reads with credentials too).
  const anyMethod = methods.has('*');
  const methodsValue = [...methods].join(', ');
  const allowHeaders = config.allowHeaders ? new Set(config.allowHeaders.map((h) => h.toLowerCase())) : null;
  const allowHeadersValue = config.allowHeaders?.length ? config.allowHeaders.join(', ') : null;
  const expose = config.exposeHeaders?.length ? config.exposeHeaders.join(', ') : null;
  const maxAge = config.maxAge === undefined ? null : String(config.maxAge);
  const privateNetwork = config.privateNetwork === true;
  const preflightVary = `Origin, Access-Control-Request-Method, Access-Control-Request-Headers${
    privateNetwork ? ', Access-Control-Request-Private-Network' : ''
  }`;

  const allowOrigin = (origin: string): string | null =>
    origins.allows(origin) ? (star ? '*' : origin) : null;

  const refuse = (reason: string): PreflightAnswer => ({ allowed: false, reason, vary: preflightVary });

  return {
    allowOrigin,
    credentials,
    expose,
    preflight(origin, method, requestHeaders, wantsPrivateNetwork) {
      const allowedOrigin = allowOrigin(origin);
      if (allowedOrigin === null) return refuse(`the origin ${JSON.stringify(origin)} is not allowed`);
      if (!anyMethod && !methods.has(method))
        return refuse(`the method ${JSON.stringify(method)} is not allowed`);
      const requested = requestHeaders === undefined ? [] : headerList(requestHeaders);
      if (requested === null) return refuse('Access-Control-Request-Headers is not a list of header names');
      if (allowHeaders !== null)
        for (const h of requested)
          if (!allowHeaders.has(h)) return refuse(`the request header ${JSON.stringify(h)} is not allowed`);
      const headers: Record<string, string> = {
        'access-control-allow-origin': allowedOrigin,
        'access-control-allow-methods': anyMethod ? method : methodsValue,
        vary: preflightVary,
      };
      // Unset allowHeaders: the requested names are answered back (each checked to be a token above).
      const allowed = allowHeadersValue ?? (requested.length ? requested.join(', ') : null);
      if (allowed !== null) headers['access-control-allow-headers'] = allowed;
      if (credentials) headers['access-control-allow-credentials'] = 'true';
      // Read by browsers on the actual response only; on the preflight too for clients that look
      // there (Gateway API's conformance suite does).
      if (expose !== null) headers['access-control-expose-headers'] = expose;
      if (maxAge !== null) headers['access-control-max-age'] = maxAge;
      // Without privateNetwork the header is left out: the browser refuses the private-network request itself.
      if (privateNetwork && wantsPrivateNetwork) headers['access-control-allow-private-network'] = 'true';
      return { allowed: true, headers };
    },
  };
}

/** Access-Control-Request-Headers as lower-case names, or null when an entry is not a header name. */
export function headerList(value: string): string[] | null {
  const out: string[] = [];
  for (const part of value.split(',')) {
    const name = part.trim().toLowerCase();
    if (name === '') continue;
    if (!TOKEN.test(name)) return null;
    out.push(name);
  }
  return out;
}

/** The upstream's Vary with Origin added (once; `*` already covers it). */
export function mergeVary(vary: string | string[] | undefined): string {
  if (vary === undefined) return ACTUAL_VARY;
  const value = Array.isArray(vary) ? vary.join(', ') : vary;
  for (const part of value.split(',')) {
    const token = part.trim().toLowerCase();
    if (token === 'origin' || token === '*') return value;
  }
  return value.trim() === '' ? ACTUAL_VARY : `${value}, ${ACTUAL_VARY}`;
}

/** An upstream's own CORS response headers: dropped on a CORS route, where the gateway's policy answers. */
export const UPSTREAM_CORS_HEADERS = [
  'access-control-allow-origin',
  'access-control-allow-credentials',
  'access-control-expose-headers',
  'access-control-allow-methods',
  'access-control-allow-headers',
  'access-control-max-age',
  'access-control-allow-private-network',
] as const;
