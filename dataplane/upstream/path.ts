/**
 * The path sent upstream: the route's path rewrite applied to the normalized path (or a
 * transformer's rewritten path, `rewritten`, taken as it is), the upstream's base path prepended.
 *
 * The one definition of path rewriting, compiled once per route (pathRewrite): a route's
 * stripPrefix is ReplacePrefixMatch "/", and Gateway API's URLRewrite is the same two primitives.
 */
import { normalizePath } from '../config/path-grammar.ts';
import { CAPTURE_REF, pathRegex } from '../config/path-regex.ts';
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
 * - ReplaceFullPathWithCaptures (a RegularExpression match only, the door checks): the path is
 *   `value` with "$1" … "$9" the match's captures, as nginx's `rewrite` builds it for
 *   ingress-nginx's rewrite-target (path /api(/|$)(.*), value /$2: /api/users → /users). The
 *   result is normalized as a request path (normalizePath): a capture can hold dot segments
 *   ("/a(.*)" on "/a../x" captures "../x") that would climb in a back end that resolves them.
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
  if (r.type === 'ReplaceFullPathWithCaptures') return withCaptures(pathRegex(match.value), r.value);
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

/**
 * `value` split once at its references: literal, capture number, literal, … A path normalizes
 * but where a capture cuts a percent-escape in two ("/a(.)" on "/a%C3%A9" captures "%"); then
 * the value without its captures is sent, never a path the data plane could not have read.
 */
function withCaptures(re: RegExp, value: string): PathRewrite {
  const parts = value.split(new RegExp(CAPTURE_REF, 'g'));
  const literals = parts.filter((_, i) => i % 2 === 0);
  const groups = parts.filter((_, i) => i % 2 === 1).map(Number);
  const bare = normalizePath(literals.join(''));
  const fallback = typeof bare === 'string' ? bare : '/';
  return (path) => {
    const m = re.exec(path);
    if (m === null) return fallback; // not reached: the router matched the path with this regex
    let out = literals[0];
    for (let i = 0; i < groups.length; i++) out += (m[groups[i]] ?? '') + literals[i + 1];
    const n = normalizePath(out);
    return typeof n === 'string' ? n : fallback;
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
