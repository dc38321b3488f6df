/**
 * HTTPRoute rules that answer by themselves, as the data plane's redirect and respond handler
 * kinds: a RequestRedirect filter (the spec's HTTPRequestRedirectFilter, default status 302), and
 * a rule without a valid backend (none given, one refused or missing: the spec's 500, here
 * SLC_ERR_BACKEND_INVALID, so that its requests never fall through to another route).
 */
import type { Route } from '../../dataplane/config/route-table.ts';
import type { HTTPRouteFilter, HTTPRouteRule } from '../api/gateway-api.ts';

type Entry = Route['handler'];

export const INVALID_BACKEND: Entry = { problem: 'SLC_ERR_BACKEND_INVALID', status: 500, type: 'respond' };

/** What a rule that calls no upstream stands in for spec.service (never dialled: no upstream is made). */
export const NO_BACKEND = { service: 'none', url: 'http://none.invalid', endpoints: undefined };

interface Redirect {
  scheme?: string;
  hostname?: string;
  port?: number;
  statusCode?: number;
  path?: {
    type: 'ReplaceFullPath' | 'ReplacePrefixMatch';
    replaceFullPath?: string;
    replacePrefixMatch?: string;
  };
}

const STATUSES = new Set([301, 302, 303, 307, 308]);

function redirectOf(f: HTTPRouteFilter): Redirect | undefined {
  return f.type === 'RequestRedirect' ? (f.requestRedirect as Redirect | undefined) : undefined;
}

/** Why a RequestRedirect filter cannot be served, or undefined. */
export function redirectProblem(f: HTTPRouteFilter): string | undefined {
  const r = redirectOf(f);
  if (r === undefined) return 'RequestRedirect without its requestRedirect';
  if (r.scheme !== undefined && r.scheme !== 'http' && r.scheme !== 'https')
    return `requestRedirect.scheme ${r.scheme} (http and https are served)`;
  if (r.statusCode !== undefined && !STATUSES.has(r.statusCode))
    return `requestRedirect.statusCode ${r.statusCode} (301, 302, 303, 307 and 308 are served)`;
  return undefined;
}

/** The redirect entry of a rule with a RequestRedirect filter; undefined without one. */
export function redirectEntry(rule: HTTPRouteRule): Entry | undefined {
  const f = (rule.filters ?? []).find((x) => x.type === 'RequestRedirect');
  const r = f && redirectOf(f);
  if (r === undefined || redirectProblem(f!)) return undefined;
  const given = r.path?.type === 'ReplaceFullPath' ? r.path.replaceFullPath : r.path?.replacePrefixMatch;
  // An empty prefix replacement means the root, which the data plane writes as "/".
  const value = given === '' ? '/' : given;
  // Keys in sorted order: the table's canonical text is written without a sorted copy.
  return {
    ...(r.hostname !== undefined && { hostname: r.hostname.toLowerCase() }),
    ...(r.path && value !== undefined && { path: { type: r.path.type, value } }),
    ...(r.port !== undefined && { port: r.port }),
    ...(r.scheme !== undefined && { scheme: r.scheme as 'http' | 'https' }),
    statusCode: (r.statusCode ?? 302) as 301 | 302 | 303 | 307 | 308,
    type: 'redirect',
  };
}
