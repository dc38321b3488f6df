/**
 * The path sent upstream: the route's path rewrite applied to the normalized path (or a
 * transformer's rewritten path, `rewritten`, taken as it is), the upstream's base path prepended.
 *
 * The one definition of path rewriting, compiled once per route (pathRewrite): a route's
 * stripPrefix is ReplacePrefixMatch "/", and Gateway API's URLRewrite is the same two primitives.
 */
import type { PathMatch, Route } from '../config/route-table.ts';

/** A route's rewrite of the normalized request path; null: the path goes as it is. */
export type PathRewrite = (path: string) => string;

/**
 * The route's rewrite, or null when it has none (the plain path pays nothing):
 * - ReplaceFullPath: every matched path becomes `value`;
 * - ReplacePrefixMatch: the matched prefix P is replaced by `value`, by Gateway API's slash rules:
 *   a trailing "/" of the replacement is dropped before the rest of the path is appended, and an
 *   empty result is "/" (P /foo, value /xyz: /foo/bar → /xyz/bar, /foo → /xyz, /foo/ → /xyz/;
 *   value "/": /foo/bar → /bar, /foo → /). Route paths are normalized (no trailing "/" but the
 *   root), so P ends on a segment boundary; P "/" replaces nothing but leads the path.
 * stripPrefix is ReplacePrefixMatch "/" (of no effect on the root prefix).
 */
export function pathRewrite(
  match: PathMatch,
  stripPrefix: boolean,
  rewrite: Route['rewrite'],
): PathRewrite | null {
  const strip = stripPrefix && match.type === 'Prefix';
  const r = rewrite?.path ?? (strip ? { type: 'ReplacePrefixMatch' as const, value: '/' } : undefined);
  if (r === undefined) return null;
  if (r.type === 'ReplaceFullPath') {
    const full = r.value;
    return () => full;
  }
  const base = r.value.replace(/\/+$/, '');
  const prefix = match.value;
  if (prefix === '/') {
    if (base === '') return null; // "/" for "/": every path stays as it is
    return (path) => (path === '/' ? base : base + path);
  }
  const cut = prefix.length;
  return (path) => {
    const p = base + path.slice(cut);
    return p === '' ? '/' : p;
  };
}

export function upstreamPath(
  path: string,
  query: string,
  rewrite: PathRewrite | null,
  basePath: string,
  rewritten: string | null = null,
): string {
  let p = rewritten ?? path;
  if (rewrite !== null && rewritten === null) p = rewrite(p);
  if (basePath) p = p === '/' ? basePath : basePath + p;
  return query ? `${p}?${query}` : p;
}
