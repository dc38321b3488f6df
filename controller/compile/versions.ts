/**
 * Pass 2 (after expandMatches, before normalizePaths): a GatewayRoute with spec.versions is
 * served as ordinary routes, one per route path × version × selector:
 *   path       /v2 + the route path             id …/<match-index>/<version>/path
 *   header     the route path + Accept-Version   id …/<match-index>/<version>/header
 *   mediaType  the route path + Accept parameter id …/<match-index>/<version>/media-type
 *   default    the route path as written         id …/<match-index>/<version>/default
 * so the data plane keeps one router, and precedence does the choosing: a longer (versioned)
 * path beats a header, a header or media type beats the plain default. Colliding version paths
 * are then conflicts like any other. Routes without versions pass through untouched.
 */
import { httpDate } from '../../dataplane/config/http-date.ts';
import type { RouteDeprecation } from '../../dataplane/config/route-table.ts';
import type { ModelVersion } from '../validate/versions.ts';
import type { Draft, Pass } from './draft.ts';

type Selector = NonNullable<Draft['selector']>;

export const expandVersions: Pass = (state) => {
  if (!state.drafts.some((d) => d.route.versions)) return state;
  const drafts: Draft[] = [];
  for (const d of state.drafts) {
    const versions = d.route.versions;
    if (versions === undefined) {
      drafts.push(d);
      continue;
    }
    const variant = (v: ModelVersion, selector: Selector, changes: Partial<Draft> = {}): Draft => ({
      ...d,
      id: `${d.id}/${v.name}/${selector}`,
      version: v,
      selector,
      ...changes,
    });
    // By selector, then version: a request naming a version two ways (header and media type)
    // gets the header's, since equal ranks keep this order through the (stable) precedence sort.
    for (const v of versions.list)
      if (v.path !== undefined) {
        const rest = d.match.path.value === '/' ? '' : d.match.path.value;
        drafts.push(
          variant(v, 'path', { match: { ...d.match, path: { ...d.match.path, value: v.path + rest } } }),
        );
      }
    for (const v of versions.list)
      if (v.header !== undefined) {
        const headers = sortedHeaders([
          ...(d.match.headers ?? []),
          { name: versions.header, value: v.header },
        ]);
        drafts.push(variant(v, 'header', { match: { ...d.match, headers } }));
      }
    for (const v of versions.list)
      if (v.mediaType !== undefined) {
        const mediaType = { parameter: versions.mediaTypeParameter, value: v.mediaType };
        drafts.push(variant(v, 'media-type', { match: { ...d.match, mediaType } }));
      }
    for (const v of versions.list) if (versions.default === v.name) drafts.push(variant(v, 'default'));
  }
  return { ...state, drafts };
};

// The same order expand-matches gives header sets: by "name\nvalue" in code-unit order.
function sortedHeaders(headers: { name: string; value: string }[]) {
  const key = (h: { name: string; value: string }) => `${h.name}\n${h.value}`;
  return [...new Map(headers.map((h) => [key(h), h])).values()].sort((a, b) =>
    key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0,
  );
}

/** The header values a deprecated version's responses carry, computed once here. */
export function deprecationOf(v: ModelVersion): RouteDeprecation | undefined {
  const d = v.deprecation;
  if (d === undefined) return undefined;
  const links = d.link
    ? [`<${d.link}>; rel="deprecation"`, ...(d.sunsetMs !== undefined ? [`<${d.link}>; rel="sunset"`] : [])]
    : [];
  return {
    deprecation: `@${d.dateMs / 1000}`, // RFC 9745: an sf-date, seconds since the epoch
    ...(d.sunsetMs !== undefined && { sunset: httpDate(d.sunsetMs) }),
    ...(links.length && { link: links.join(', ') }),
    ...(d.gone && d.sunsetMs !== undefined && { goneAtMs: d.sunsetMs }),
  };
}
