/**
 * A pass after attachPlugins, before precedence: routes for the paths plugins answer
 * themselves (a manifest's ownPaths), so users do not write that plumbing. The case that asks
 * for it: idempotency with async.enabled answers 202 with `Location: <operationsPath>/<key>`,
 * and only a route carrying the same plugin, for the same caller, can answer that GET. For each
 * route carrying such a plugin:
 *   - a route of the same GatewayRoute carrying the same GatewayPlugin and the same
 *     authentication plugins already matches GET <path>/<key> on the route's hosts (with no
 *     header match): nothing is added;
 *   - a route of the same GatewayRoute without them has the Prefix <path> itself and takes
 *     GET: the user routes that path elsewhere, so the object is refused (Accepted=False,
 *     naming that path and the plugin's field) rather than have its traffic taken over;
 *   - else a route is added: Prefix <path>, the plugin's methods, the route's hosts, id
 *     route/<ns>/<name>/<route-name>/<own-path name>, and the route's plugins that establish
 *     and limit the caller (the phases before transform-request: CORS, authentication, rate
 *     limits, so the lookup's caller is the 202's) plus the plugin itself. Transforms and
 *     caches shape an upstream call, which a lookup never makes. The same added route wanted
 *     twice (several rules, several GatewayRoutes with the same plugins) is added once, by the
 *     precedence of who wants it.
 * Two GatewayRoutes wanting the same match with different plugins are an ordinary conflict
 * (dropConflicts: the older keeps it); requirePluginPaths then leaves out the newer one's
 * routes whose Location would lead nowhere for their callers.
 */
import { canonicalJson } from '../../dataplane/config/canonical-json.ts';
import { pluginManifest } from '../../dataplane/config/catalog.ts';
import type { OwnPath } from '../../dataplane/config/manifest.ts';
import { normalizeRoutePath } from '../../dataplane/config/path-grammar.ts';
import { phaseIndex } from '../../dataplane/config/phases.ts';
import type { PluginInstance, RouteMatch } from '../../dataplane/config/route-table.ts';
import { refKey } from '../source/resource-set.ts';
import { type Diagnostic, invalid } from '../validate/diagnostic.ts';
import type { ModelRoute } from '../validate/model.ts';
import { type Draft, type Pass, pathField, rejectObjects } from './draft.ts';
import { comparePrecedence } from './precedence.ts';

const LOOKUP_PHASES_BEFORE = phaseIndex('transform-request');

export const addPluginPaths: Pass = (state) => {
  const errors: Diagnostic[] = [];
  const ofObject = new Map<ModelRoute, Draft[]>();
  for (const d of state.drafts) {
    const list = ofObject.get(d.route);
    if (list === undefined) ofObject.set(d.route, [d]);
    else list.push(d);
  }
  // First what each GatewayRoute lacks or refuses, looking only at its own routes: so whether
  // one object is refused never depends on another, and a refused one shares nothing below.
  const lacking: { d: Draft; p: PluginInstance; own: OwnPath; path: string }[] = [];
  for (const d of state.drafts) {
    for (const p of d.plugins) {
      for (const own of pluginManifest(p.name)?.ownPaths?.(p.config) ?? []) {
        const path = normalizeRoutePath(own.path);
        if (typeof path !== 'string') {
          errors.push(invalid(d.route.ref, referenceField(d, p), `${fieldOf(p, own)}: ${path.error}`));
          continue;
        }
        const mine = ofObject.get(d.route)!;
        if (mine.some((x) => answersFor(x, d, p) && covers(x.match, path, d.match.hosts))) continue;
        const taken = mine.find((x) => !answersFor(x, d, p) && takesPrefix(x.match, path, d.match.hosts));
        if (taken === undefined) lacking.push({ d, p, own, path });
        else
          errors.push(
            invalid(
              d.route.ref,
              pathField(taken),
              `routes GET ${path}/… here, where ${fieldOf(p, own)} sends the callers of ${d.id}, but does not ` +
                `carry that plugin and the same authentication (${identity(d) || 'none'}): add them to this route, ` +
                `or give ${own.field} a path of its own`,
            ),
          );
      }
    }
  }
  const refused = new Set(errors.map((e) => refKey(e.object)));
  /** The added route by what it is (match and plugins), and the drafts that send callers to it. */
  const wanted = new Map<string, { draft: Draft; by: Draft[] }>();
  for (const { d, p, own, path } of lacking) {
    if (refused.has(refKey(d.route.ref))) continue;
    const route = ownPathDraft(d, p, own, path);
    const key = canonicalJson([route.match, route.plugins.map((x) => x.id)]);
    const found = wanted.get(key);
    if (found === undefined) wanted.set(key, { draft: route, by: [d] });
    else {
      found.by.push(d);
      if (comparePrecedence(route, found.draft) < 0) found.draft = route;
    }
  }
  // In precedence order, so which of two same-named routes gets "-2" never depends on input order.
  const entries = [...wanted.values()].sort((a, b) => comparePrecedence(a.draft, b.draft));
  const added = uniqueIds(entries.map((w) => w.draft));
  const needs = new Map<Draft, string[]>();
  entries.forEach(({ by }, i) => {
    for (const d of by) {
      const list = needs.get(d);
      if (list === undefined) needs.set(d, [added[i].id]);
      else list.push(added[i].id);
    }
  });
  const drafts = [...state.drafts.map((d) => (needs.has(d) ? { ...d, needs: needs.get(d) } : d)), ...added];
  return rejectObjects({ ...state, drafts }, errors);
};

/**
 * After dropConflicts: a route whose callers are sent to an added route that was left out (an
 * older GatewayRoute has that match with other plugins) is left out too, naming why.
 */
export const requirePluginPaths: Pass = (state) => {
  const kept = new Set(state.drafts.map((d) => d.id));
  const missing: Diagnostic[] = [];
  const drafts = state.drafts.filter((d) => {
    const lost = d.needs?.find((id) => !kept.has(id));
    if (lost === undefined) return true;
    missing.push({
      object: d.route.ref,
      field: pathField(d),
      condition: 'Accepted',
      reason: 'Conflicted',
      message: `${d.id} is left out: the Location of its 202 answers needs ${lost}, which is left out`,
    });
    return false;
  });
  return { ...state, drafts, diagnostics: [...state.diagnostics, ...missing] };
};

function ownPathDraft(d: Draft, p: PluginInstance, own: OwnPath, path: string): Draft {
  const match: RouteMatch = { path: { type: 'Prefix', value: path }, methods: [...own.methods].sort() };
  if (d.match.hosts) match.hosts = d.match.hosts;
  const rule = d.route.spec.routes[d.ruleIndex];
  return {
    id: `route/${d.namespace}/${d.name}/${d.routeName}/${own.name}`,
    route: d.route,
    ruleIndex: d.ruleIndex,
    routeName: d.routeName,
    matchIndex: rule.paths.length,
    namespace: d.namespace,
    name: d.name,
    createdMs: d.createdMs,
    ...(d.gatewayApiRule !== undefined && { gatewayApiRule: d.gatewayApiRule }),
    match,
    stripPrefix: false,
    httpsRedirect: d.httpsRedirect,
    // GET <path> without a key is no lookup: it goes where the route's other requests go.
    ...(d.handler ? { handler: d.handler } : { upstream: d.upstream }),
    plugins: d.plugins.filter(
      (x) => x.id === p.id || phaseIndex(pluginManifest(x.name)!.phase) < LOOKUP_PHASES_BEFORE,
    ),
    ownPath: { field: referenceField(d, p), what: fieldOf(p, own) },
  };
}

/** Two rules of one GatewayRoute wanting the same path with different plugins: ids stay unique. */
function uniqueIds(added: Draft[]): Draft[] {
  const seen = new Map<string, number>();
  return added.map((d) => {
    const n = (seen.get(d.id) ?? 0) + 1;
    seen.set(d.id, n);
    return n === 1 ? d : { ...d, id: `${d.id}-${n}` };
  });
}

const carries = (d: Draft, p: PluginInstance): boolean => d.plugins.some((x) => x.id === p.id);

/** The plugins that say who the caller is (the authenticate phase): records belong to the caller. */
function identity(d: Draft): string {
  return d.plugins
    .filter((x) => pluginManifest(x.name)!.phase === 'authenticate')
    .map((x) => x.id)
    .sort()
    .join(', ');
}

/** Whether route x can answer d's callers on p's own path: it carries p and knows callers as d does. */
const answersFor = (x: Draft, d: Draft, p: PluginInstance): boolean =>
  carries(x, p) && identity(x) === identity(d);

/** Whether a match takes every GET <path>/<key> on these hosts (undefined: any host). */
function covers(m: RouteMatch, path: string, hosts: readonly string[] | undefined): boolean {
  const prefix = m.path.value === '/' || path === m.path.value || path.startsWith(`${m.path.value}/`);
  return m.path.type === 'Prefix' && prefix && getsAll(m, hosts);
}

/** Whether a match has that very prefix and takes GET there: the path is routed on purpose. */
function takesPrefix(m: RouteMatch, path: string, hosts: readonly string[] | undefined): boolean {
  return m.path.type === 'Prefix' && m.path.value === path && getsAll(m, hosts);
}

function getsAll(m: RouteMatch, hosts: readonly string[] | undefined): boolean {
  if (m.headers || m.mediaType || m.query || m.cookies) return false;
  if (m.methods && !m.methods.includes('GET')) return false;
  return !m.hosts || (hosts?.every((h) => m.hosts!.includes(h)) ?? false);
}

/** "GatewayPlugin ns/name's async.operationsPath \"/operations\"" */
function fieldOf(p: PluginInstance, own: OwnPath): string {
  return `GatewayPlugin ${p.source.namespace}/${p.source.name}'s ${own.field} ${JSON.stringify(own.path)}`;
}

/** Where the draft's GatewayRoute names the plugin: the narrowest scope that does. */
function referenceField(d: Draft, p: PluginInstance): string {
  const name = p.source.name;
  const index = (refs: { name: string }[] | undefined) => refs?.findIndex((r) => r.name === name) ?? -1;
  const v = d.version;
  if (v && index(v.plugins) >= 0) return `spec.versions[${v.index}].plugins[${index(v.plugins)}]`;
  const rule = d.route.spec.routes[d.ruleIndex];
  if (index(rule.plugins) >= 0) return `spec.routes[${d.ruleIndex}].plugins[${index(rule.plugins)}]`;
  return `spec.plugins[${index(d.route.spec.plugins)}]`;
}
