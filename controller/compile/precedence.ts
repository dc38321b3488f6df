/**
 * Pass 5: the table in precedence order; the data plane takes the first route that matches.
 * The comparator's rules, most important first (the first that differs decides):
 *   0. Drafts of HTTPRoutes and GRPCRoutes only: more characters in a non-wildcard host first,
 *      then more characters in the host; one for any host after both. Gateway API ranks the
 *      routes by the host name that matched before any match rule (HTTPRoute spec.hostnames),
 *      so foo.example.com's "/" outranks *.example.com's "/very/specific"; those drafts carry
 *      one host each (gateway-api/http-routes.ts splits them), so the rank is the matched one's.
 *   1. Exact before Prefix: an exact path is the most specific statement there is (a regular
 *      expression, from an Ingress under ingress-nginx's use-regex, between them).
 *   2. Longer path first: /api/v2 is more specific than /api.
 *   3. Routes with hosts before those without (any host).
 *   4. More header matches first (a media-type parameter match counts as one).
 *   5. Routes with methods before those without (any method).
 *   5b. More query matches first (Gateway API's last match rule, after headers and method).
 *   5c. More cookie matches first (an Ingress's canary-by-cookie: after its header's routes,
 *       before its plain path, as ingress-nginx ranks header, cookie, weight).
 *   6. Older creationTimestamp first; missing sorts last. An existing route is never taken
 *      over by one created later (the rule Gateway API uses).
 *   7. namespace, name, route name, match index: a total order, so ties cannot depend on input order.
 * Drafts of HTTPRoutes and GRPCRoutes (gatewayApiRule set) follow Gateway API's order instead
 * where it differs: 5 before 4 (a method match outranks any number of header matches), and in 7
 * "namespace/name" compared as one text, then the rules in list order (rule 2 before rule 10).
 * Each draft is read as one tuple of keys, so the order stays total when both kinds meet (they
 * never compete: Gateway API routes are served only on Gateway listeners, the others never).
 */
import type { Pass, Ranked } from './draft.ts';

// A regular expression (an Ingress path under use-regex) between the two, as nginx takes its
// regex locations before its prefix ones; the longer first among them, as ingress-nginx orders them.
const PATH_TYPE_RANK = { Exact: 0, RegularExpression: 1, Prefix: 2 } as const;

export function comparePrecedence(a: Ranked, b: Ranked): number {
  const [a4, a5] = matchKeys(a);
  const [b4, b5] = matchKeys(b);
  const [a0, a0b] = hostKeys(a);
  const [b0, b0b] = hostKeys(b);
  return (
    a0 - b0 || // 0
    a0b - b0b ||
    PATH_TYPE_RANK[a.match.path.type] - PATH_TYPE_RANK[b.match.path.type] || // 1
    b.match.path.value.length - a.match.path.value.length || // 2
    Number(!a.match.hosts) - Number(!b.match.hosts) || // 3
    a4 - b4 || // 4 (Gateway API: 5)
    a5 - b5 || // 5 (Gateway API: 4)
    queryCount(b) - queryCount(a) || // 5b
    cookieCount(b) - cookieCount(a) || // 5c
    compareCreated(a.createdMs, b.createdMs) || // 6
    compareText(owner(a), owner(b)) || // 7
    compareText(ownerName(a), ownerName(b)) ||
    (a.gatewayApiRule ?? 0) - (b.gatewayApiRule ?? 0) ||
    compareText(a.routeName, b.routeName) ||
    a.matchIndex - b.matchIndex
  );
}

/**
 * Rule 0 as two numbers, smaller first: minus the characters of a non-wildcard host, minus those
 * of the host. Zero for GatewayRoutes (hosts rank by rule 3) and for drafts of any host.
 */
function hostKeys(r: Ranked): [number, number] {
  const host = r.gatewayApiRule === undefined ? undefined : r.match.hosts?.[0];
  if (host === undefined) return [0, 0];
  return [host.startsWith('*.') ? 0 : -host.length, -host.length];
}

/** Rules 4 and 5 as two numbers, smaller first, in the order the draft's kind ranks them. */
function matchKeys(r: Ranked): [number, number] {
  const headers = -headerCount(r);
  const anyMethod = Number(!r.match.methods);
  return r.gatewayApiRule === undefined ? [headers, anyMethod] : [anyMethod, headers];
}

/** Rule 7's first text: the namespace, or Gateway API's "namespace/name". */
const owner = (r: Ranked) => (r.gatewayApiRule === undefined ? r.namespace : `${r.namespace}/${r.name}`);
/** Rule 7's second text: the name, or nothing more (Gateway API's is in the first). */
const ownerName = (r: Ranked) => (r.gatewayApiRule === undefined ? r.name : '');

function queryCount(r: Ranked): number {
  return r.match.query?.length ?? 0;
}

function cookieCount(r: Ranked): number {
  return r.match.cookies?.length ?? 0;
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
  const keyed = state.drafts.map((d) => {
    const [k4, k5] = matchKeys(d);
    const [host, hostAll] = hostKeys(d);
    return {
      d,
      host,
      hostAll,
      type: PATH_TYPE_RANK[d.match.path.type],
      length: d.match.path.value.length,
      anyHost: Number(!d.match.hosts),
      k4,
      k5,
      queries: queryCount(d),
      cookies: cookieCount(d),
      created: d.createdMs ?? Number.POSITIVE_INFINITY, // missing sorts last
      owner: owner(d),
      ownerName: ownerName(d),
      rule: d.gatewayApiRule ?? 0,
    };
  });
  keyed.sort(
    (a, b) =>
      a.host - b.host || // 0
      a.hostAll - b.hostAll ||
      a.type - b.type || // 1
      b.length - a.length || // 2
      a.anyHost - b.anyHost || // 3
      a.k4 - b.k4 || // 4 (Gateway API: 5)
      a.k5 - b.k5 || // 5 (Gateway API: 4)
      b.queries - a.queries || // 5b
      b.cookies - a.cookies || // 5c
      (a.created === b.created ? 0 : a.created < b.created ? -1 : 1) || // 6
      compareText(a.owner, b.owner) || // 7
      compareText(a.ownerName, b.ownerName) ||
      a.rule - b.rule ||
      compareText(a.d.routeName, b.d.routeName) ||
      a.d.matchIndex - b.d.matchIndex,
  );
  return { ...state, drafts: keyed.map((k) => k.d) };
};
