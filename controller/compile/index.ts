/**
 * compile: Model → RouteTable, as an ordered list of small passes (a new feature is a new
 * pass). Pure and deterministic: the same model always gives the same table, byte for byte.
 */
import {
  type Certificate,
  type Listener,
  type RouteTable,
  TABLE_VERSION,
  type Upstream,
} from '../../dataplane/config/route-table.ts';
import { keySorter } from '../../dataplane/config/canonical-json.ts';
import type { Diagnostic } from '../validate/diagnostic.ts';
import type { Model } from '../validate/model.ts';
import { attachPlugins } from './attach-plugins.ts';
import { collectCertificates } from './certificates.ts';
import { dropConflicts } from './conflicts.ts';
import type { CompileState, Draft, Pass } from './draft.ts';
import { expandMatches } from './expand-matches.ts';
import { normalizePaths } from './normalize-paths.ts';
import { addPluginPaths, requirePluginPaths } from './plugin-paths.ts';
import { sortByPrecedence } from './precedence.ts';
import { resolveUpstreams } from './resolve-upstreams.ts';
import { deprecationOf, expandVersions } from './versions.ts';

/** In order; each pass may rely on the ones before it. */
export const PASSES: readonly Pass[] = [
  expandMatches, // one draft per path, ids, methods/hosts/headers as sorted sets
  expandVersions, // one draft per path × version × selector (spec.versions)
  normalizePaths, // before anything compares paths
  resolveUpstreams, // url + timeouts → upstream ids by content; a handler kind's entry
  attachPlugins, // service scope, then route scope overriding by plugin type
  addPluginPaths, // needs the plugins: routes for the paths they answer (idempotency's operations)
  sortByPrecedence, // the numbered-rule comparator
  dropConflicts, // needs the order: the first of identical matches wins
  requirePluginPaths, // a route whose callers' lookup route lost a conflict goes too
  collectCertificates, // spec.tls by host; the older route keeps a host claimed twice
];

export interface Compiled {
  table: RouteTable;
  diagnostics: Diagnostic[];
}

export function compile(model: Model): Compiled {
  let state: CompileState = { model, drafts: [], diagnostics: [] };
  for (const pass of PASSES) state = pass(state);
  const certificates = [...(state.certificates ?? []), ...(model.gateway?.certificates ?? [])].sort((a, b) =>
    a.id < b.id ? -1 : a.id > b.id ? 1 : 0,
  );
  return {
    table: tableOf(state.drafts, certificates, model.gateway?.listeners ?? []),
    diagnostics: [...state.diagnostics],
  };
}

function tableOf(
  drafts: readonly Draft[],
  certificates: readonly Certificate[],
  listeners: readonly Listener[],
): RouteTable {
  const upstreams = new Map<string, Upstream>();
  const sorted = keySorter();
  const routes = drafts.map((d) => {
    // Every draft left has a handler or an upstream (resolveUpstreams drops the others).
    for (const u of d.handler?.upstreams ?? [
      d.upstream!,
      ...(d.canary ? [d.canary.upstream] : []),
      ...(d.errorPages ? [d.errorPages.upstream] : []),
    ])
      upstreams.set(u.id, u);
    const sticky = d.version?.sticky;
    const deprecation = d.version && deprecationOf(d.version);
    // Keys in sorted order, here and in every object a table holds: the canonical text is then
    // written without a sorted copy of the table (canonical-json.ts). The objects every route has
    // are built that way where they are made (the source, plugin instances and their config,
    // upstreams); the rarer ones are sorted here.
    return {
      ...(deprecation && { deprecation: sorted(deprecation) }),
      handler: (d.handler && sorted(d.handler.entry)) ?? {
        ...(d.canary && {
          canary: { ...(sticky && { sticky }), upstream: d.canary.upstream.id, weight: d.canary.weight },
        }),
        ...(d.errorPages && {
          errorPages: sorted({
            ...d.errorPages,
            headers: sorted(d.errorPages.headers),
            upstream: d.errorPages.upstream.id,
          }),
        }),
        type: 'proxy' as const,
        upstream: d.upstream!.id,
      },
      ...(d.httpsRedirect && { httpsRedirect: true as const }),
      id: d.id,
      ...(d.route.listeners && { listeners: [...d.route.listeners] }),
      match: sorted(d.match),
      plugins: d.plugins,
      ...(d.route.rewrite && { rewrite: sorted(d.route.rewrite) }),
      source: d.route.source,
      stripPrefix: d.stripPrefix,
      ...(d.websocket && { websocket: sorted(d.websocket) }),
    };
  });
  const byId = [...upstreams.values()].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  // Absent without TLS (or Gateways): a table without them hashes as it did before they existed.
  return {
    ...(certificates.length && { certificates: sorted([...certificates]) }),
    ...(listeners.length && { listeners: listeners.map((l) => sorted(l)) }),
    routes,
    upstreams: byId,
    version: TABLE_VERSION,
  };
}
