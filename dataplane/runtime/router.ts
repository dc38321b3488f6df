/**
 * Path matching on two Maps of literal paths. Each route path P has a node "at P" (the paths
 * equal to P) and, for a Prefix route, a node "below P" (the paths P/…); each node holds the list
 * of routes that could match a path reaching it, in table precedence order, including the shorter
 * prefixes above it. A lookup is one Map get for the path itself, then one per ancestor (segment
 * boundaries, deepest first) for the nearest "below" node: so the most specific node is found, and
 * its candidate list is the fallback chain (a route whose headers do not match gives way to a
 * shorter prefix without a second lookup).
 *
 * Not find-my-way, which this used as a radix tree of literal paths only (one fake method, no
 * parameters): per registered path it built a tree node, a handler store and one or two functions
 * compiled with new Function(). With 5,000 routes of two paths (heap snapshots and CPU profiles of
 * one data plane): ~30 of the runtime's ~58 MB of heap and ~230 ms of each snapshot's ~600 ms
 * build; the Maps hold ~2 MB and build in ~15 ms. Lookups are as fast (bench/router.ts).
 */
import { pathRegex } from '../config/path-regex.ts';
import type { QueryMatch } from '../config/route-table.ts';
import type { RuntimeRoute } from '../pipeline/route.ts';
import { anchoredRegex } from '../config/regex.ts';
import { cookieValue } from '../upstream/balancer.ts';

/**
 * accepts[i]: the media-type check of candidates[i] (versions selected by an Accept parameter);
 * the whole list is null when no candidate has one, so routes without versions pay one null test.
 */
type Node = { candidates: RuntimeRoute[]; indices: number[]; accepts: (AcceptMatcher | null)[] | null };
type AcceptMatcher = (accept: string | undefined) => boolean;

/**
 * "/a/b" → "/a" → "/": the paths whose Prefix routes cover a path, on segment boundaries.
 * Optimization: a loop for the last '/', not lastIndexOf, a C++ builtin (a runtime call of ~250
 * instructions, where the loop is compiled inline; a lookup climbs once per request or more).
 */
function parentOf(path: string): string | null {
  if (path === '/') return null;
  let slash = path.length - 1;
  while (slash >= 0 && path.charCodeAt(slash) !== 0x2f) slash--;
  return slash === 0 ? '/' : slash < 0 ? null : path.slice(0, slash);
}

export class RouteMatcher {
  /** The paths equal to a route path: its Exact routes and every Prefix route covering it. */
  readonly #at = new Map<string, Node>();
  /** The paths below a Prefix route's path (P/…): its Prefix routes and the ones above. */
  readonly #below = new Map<string, Node>();
  /**
   * Routes whose path is a regular expression (an Ingress's under use-regex), in table order:
   * tried against every path, each before the literal candidate found unless that one comes
   * first in the table. Empty in tables without them, which pay one length test.
   */
  readonly #patterns: { index: number; re: RegExp; route: RuntimeRoute }[] = [];
  /** Whether a route matches on the query: a table without one allocates nothing per lookup for it. */
  readonly #queries: boolean;

  constructor(routes: RuntimeRoute[]) {
    // Lists hold table indices (ascending as pushed) rather than routes sorted through a Map of
    // positions, and each key's prefix chain is collected once for its two nodes.
    const exact = new Map<string, number[]>();
    const prefix = new Map<string, number[]>();
    this.#queries = routes.some((r) => r.query !== null);
    for (let i = 0; i < routes.length; i++) {
      const { type, value } = routes[i].entry.match.path;
      if (type === 'RegularExpression') {
        this.#patterns.push({ index: i, re: pathRegex(value), route: routes[i] });
        continue;
      }
      const by = type === 'Exact' ? exact : prefix;
      const list = by.get(value);
      if (list === undefined) by.set(value, [i]);
      else list.push(i);
    }
    // The candidates of a node are found by walking up its ancestors (a few segments), not by
    // scanning every route: building stays linear in the number of routes.
    const chainOf = (key: string): number[] => {
      let out: number[] = [];
      let lists = 0;
      for (let p: string | null = key; p !== null; p = parentOf(p)) {
        const list = prefix.get(p);
        if (list === undefined) continue;
        out = lists === 0 ? list : out.concat(list);
        lists++;
      }
      return lists > 1 ? out.sort(ascending) : out;
    };
    const nodeOf = (indices: number[]): Node => {
      const candidates = indices.map((i) => routes[i]);
      const accepts = candidates.map((r) =>
        r.entry.match.mediaType ? acceptMatcher(r.entry.match.mediaType) : null,
      );
      return { candidates, indices, accepts: accepts.some((a) => a !== null) ? accepts : null };
    };
    for (const [key, list] of exact) {
      const chain = chainOf(key);
      this.#at.set(key, nodeOf(chain.length === 0 ? list : list.concat(chain).sort(ascending)));
    }
    for (const key of prefix.keys()) {
      const node = nodeOf(chainOf(key));
      if (!exact.has(key)) this.#at.set(key, node);
      this.#below.set(key, node);
    }
  }

  /**
   * The first route (in precedence order) that matches, or null. `query`: the raw query string
   * (no "?"), parsed only when a candidate has query matches, and then once.
   */
  match(
    path: string,
    method: string,
    host: string,
    headers: Record<string, string>,
    query = '',
  ): RuntimeRoute | null {
    // Paths reach here normalized (dataplane/server: dot segments resolved, escapes kept as sent)
    // and route paths are literal too, so both compare as text.
    let node = this.#at.get(path);
    for (let p = parentOf(path); node === undefined && p !== null; p = parentOf(p)) node = this.#below.get(p);
    // The query is parsed only when a candidate has query matches, and then once; a table
    // without them shares one holder conditionsMatch never reads.
    const q: Query = this.#queries ? { raw: query, params: null } : NO_QUERY;
    let i = -1;
    if (node !== undefined) {
      const { candidates, accepts } = node;
      for (let c = 0; c < candidates.length && i === -1; c++)
        if (conditionsMatch(candidates[c], method, host, headers, q, accepts === null ? null : accepts[c]))
          i = c;
    }
    if (this.#patterns.length !== 0) {
      const found = i === -1 ? Number.POSITIVE_INFINITY : node!.indices[i];
      for (const p of this.#patterns) {
        if (p.index > found) break;
        if (p.re.test(path) && conditionsMatch(p.route, method, host, headers, q, null)) return p.route;
      }
    }
    return i === -1 ? null : node!.candidates[i];
  }
}

/** A lookup's query string, and its parameters once a candidate has needed them. */
type Query = { raw: string; params: URLSearchParams | null };
const NO_QUERY: Query = Object.freeze({ raw: '', params: null }) as Query;

/** A candidate's conditions besides its path: methods, hosts, headers, cookies, query, the Accept parameter. */
function conditionsMatch(
  r: RuntimeRoute,
  method: string,
  host: string,
  headers: Record<string, string>,
  query: Query,
  accept: AcceptMatcher | null,
): boolean {
  if (r.methods !== null && !r.methods.has(method)) return false;
  if (r.hosts !== null && !r.hosts(host)) return false;
  if (r.headers !== null && !headersMatch(r.headers, headers)) return false;
  if (r.cookies !== null && !cookiesMatch(r.cookies, headers.cookie)) return false;
  if (r.query !== null) {
    query.params ??= new URLSearchParams(query.raw);
    if (!r.query(query.params)) return false;
  }
  if (accept !== null && !accept(headers.accept)) return false;
  return true;
}

function ascending(a: number, b: number): number {
  return a - b;
}

function headersMatch(
  want: ReadonlyArray<readonly [string, string | RegExp]>,
  have: Record<string, string>,
): boolean {
  for (const [name, value] of want) {
    const v = have[name];
    if (typeof value === 'string' ? v !== value : v === undefined || !value.test(v)) return false;
  }
  return true;
}

/** A route's header matches as the router reads them: exact values as strings, patterns compiled once (anchored). */
export function headerMatches(
  want: readonly { name: string; type?: 'RegularExpression'; value: string }[],
): (readonly [string, string | RegExp])[] {
  return want.map(
    (h) => [h.name, h.type === 'RegularExpression' ? anchoredRegex(h.value) : h.value] as const,
  );
}

function cookiesMatch(want: ReadonlyArray<readonly [string, string]>, cookie: string | undefined): boolean {
  if (cookie === undefined) return false;
  for (const [name, value] of want) if (cookieValue(cookie, name) !== value) return false;
  return true;
}

/**
 * A route's query matches as one test: each name's first value (Gateway API: "the first value
 * of the param" when one is repeated) equals the value, or matches the anchored pattern.
 */
export function queryMatcher(want: readonly QueryMatch[]): (params: URLSearchParams) => boolean {
  const tests = want.map((q): [string, (v: string) => boolean] => {
    if (q.type !== 'RegularExpression') return [q.name, (v) => v === q.value];
    const re = anchoredRegex(q.value);
    return [q.name, (v) => re.test(v)];
  });
  return (params) => {
    for (const [name, test] of tests) {
      const v = params.get(name);
      if (v === null || !test(v)) return false;
    }
    return true;
  };
}

/**
 * True when a media range of Accept carries the parameter with the value (RFC 9110 §12.5.1:
 * `type/subtype; name=value` ranges separated by commas; names case-insensitive, values
 * compared exactly, a quoted-string unquoted). Commas inside quoted values are not expected
 * in a version parameter and are not supported.
 */
export function acceptMatcher(want: { parameter: string; value: string }): AcceptMatcher {
  return (accept) => {
    if (accept === undefined) return false;
    for (const range of accept.split(',')) {
      const params = range.split(';');
      for (let i = 1; i < params.length; i++) {
        const p = params[i];
        const eq = p.indexOf('=');
        if (eq < 0 || p.slice(0, eq).trim().toLowerCase() !== want.parameter) continue;
        let value = p.slice(eq + 1).trim();
        if (value.length >= 2 && value.startsWith('"') && value.endsWith('"'))
          value = value.slice(1, -1).replace(/\\(.)/g, '$1');
        if (value === want.value) return true;
      }
    }
    return false;
  };
}

/**
 * Exact names and "*.suffix", compiled into one function. "*.suffix" takes one label
 * (GatewayRoute hosts, as wildcard certificates do) or, with `anyLabels`, one or more (Gateway
 * API hostnames, on routes that name listeners); never the bare suffix.
 */
export function hostMatcher(hosts: string[], anyLabels = false): (host: string) => boolean {
  const exact = new Set(hosts.filter((h) => !h.startsWith('*.')));
  const suffixes = hosts.filter((h) => h.startsWith('*.')).map((h) => h.slice(1));
  return (host) => {
    if (exact.has(host)) return true;
    for (const s of suffixes) if (underSuffix(host, s, anyLabels)) return true;
    return false;
  };
}

/**
 * Whether a host lies under ".suffix": one label more, or with `anyLabels` one or more (Gateway
 * API's wildcards); never the bare suffix. The one definition for route hosts and listeners.
 */
export function underSuffix(host: string, suffix: string, anyLabels: boolean): boolean {
  if (host.length <= suffix.length || !host.endsWith(suffix)) return false;
  // Optimization: the label count without slicing the prefix off (no string per lookup).
  return anyLabels || host.lastIndexOf('.', host.length - suffix.length - 1) === -1;
}
