/**
 * HTTPRoute URLRewrite filters as the route table's `rewrite` (the data plane's one path rewrite,
 * dataplane/upstream/path.ts, that stripPrefix is too): `hostname` is the Host the back end gets,
 * `path` ReplaceFullPath or ReplacePrefixMatch (of the match's PathPrefix; an empty replacement
 * is the root, "/"). A path the data plane would refuse (not written normalized, a dot segment)
 * is refused here first, naming the field.
 */
import { HOST_NAME } from '../../dataplane/config/http-grammar.ts';
import { rewritePathProblem } from '../../dataplane/config/path-grammar.ts';
import type { Route } from '../../dataplane/config/route-table.ts';
import type { HTTPRouteFilter, HTTPRouteRule } from '../api/gateway-api.ts';

interface UrlRewrite {
  hostname?: string;
  path?: {
    type: 'ReplaceFullPath' | 'ReplacePrefixMatch';
    replaceFullPath?: string;
    replacePrefixMatch?: string;
  };
}

function urlRewriteOf(f: HTTPRouteFilter): UrlRewrite | undefined {
  return f.type === 'URLRewrite' ? (f.urlRewrite as UrlRewrite | undefined) : undefined;
}

/** The replacement path as the table holds it ("" is the root), or undefined without one. */
function pathValue(r: UrlRewrite): string | undefined {
  const given = r.path?.type === 'ReplaceFullPath' ? r.path.replaceFullPath : r.path?.replacePrefixMatch;
  return given === '' ? '/' : given;
}

/** Why a URLRewrite filter of this rule cannot be served, or undefined. */
export function urlRewriteProblem(f: HTTPRouteFilter, rule: HTTPRouteRule): string | undefined {
  const r = urlRewriteOf(f);
  if (r === undefined) return 'URLRewrite without its urlRewrite';
  if (r.hostname !== undefined && !HOST_NAME.test(r.hostname))
    return `urlRewrite.hostname ${JSON.stringify(r.hostname)} is not a lower-case host name`;
  if (r.path === undefined) return undefined;
  const value = pathValue(r);
  if (value === undefined) return `urlRewrite.path: ${r.path.type} without its value`;
  const problem = rewritePathProblem(value);
  if (problem) return `urlRewrite.path ${JSON.stringify(value)}: ${problem}`;
  if (
    r.path.type === 'ReplacePrefixMatch' &&
    rule.matches?.some((m) => (m.path?.type ?? 'PathPrefix') !== 'PathPrefix')
  )
    return 'urlRewrite.path: ReplacePrefixMatch needs PathPrefix matches';
  return undefined;
}

/** The rule's rewrite (its first URLRewrite filter), or undefined. */
export function urlRewriteEntry(rule: HTTPRouteRule): Route['rewrite'] {
  const f = (rule.filters ?? []).find((x) => x.type === 'URLRewrite');
  const r = f && urlRewriteOf(f);
  if (r === undefined || urlRewriteProblem(f!, rule)) return undefined;
  const value = pathValue(r);
  // Keys in sorted order: the table's canonical text is written without a sorted copy.
  return {
    ...(r.hostname !== undefined && { hostname: r.hostname }),
    ...(r.path && value !== undefined && { path: { type: r.path.type, value } }),
  };
}
