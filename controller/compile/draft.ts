/**
 * What the compile passes hand each other: one Draft per route-table entry to be, plus the
 * diagnostics so far. A pass takes a state and returns a new one; it never edits its input.
 */
import type {
  Certificate,
  PluginInstance,
  Route,
  RouteMatch,
  Upstream,
} from '../../dataplane/config/route-table.ts';
import { refKey } from '../source/resource-set.ts';
import type { Diagnostic } from '../validate/diagnostic.ts';
import type { Model, ModelRoute } from '../validate/model.ts';
import type { ModelVersion } from '../validate/versions.ts';

/** The fields precedence sorts on (see precedence.ts). */
export interface Ranked {
  match: RouteMatch;
  createdMs: number | undefined;
  namespace: string;
  name: string;
  routeName: string;
  matchIndex: number;
  /**
   * Set on an HTTPRoute's or GRPCRoute's draft: the index of its rule in that route
   * (ModelRoute.ruleIndex). Such drafts rank as Gateway API says (precedence.ts): a method match
   * before more header matches, "namespace/name" as one text, rules in list order.
   */
  gatewayApiRule?: number;
}

export interface Draft extends Ranked {
  /** route/<ns>/<name>/<route-name>/<match-index> (httproute/… for an HTTPRoute's) */
  id: string;
  route: ModelRoute;
  ruleIndex: number;
  stripPrefix: boolean;
  httpsRedirect: boolean;
  /** The rule's WebSocket limits in ms and bytes (validate/gateway-route.ts checked the duration), its allowed origins. */
  websocket?: { idleTimeoutMs?: number; maxMessageBytes?: number; allowedOrigins?: string[] };
  /** Set by expandVersions on the drafts of a versioned GatewayRoute: the version served. */
  version?: ModelVersion;
  /** How requests select that version: path, header, media-type or default. */
  selector?: 'path' | 'header' | 'media-type' | 'default';
  /** Set by resolveUpstreams. */
  upstream?: Upstream;
  /** Set by resolveUpstreams for a version with a canary: its second backend and that one's weight. */
  canary?: { upstream: Upstream; weight: number };
  /** Set by resolveUpstreams beside upstream: the route's errorPages (ModelRoute.errorPages) and their upstream. */
  errorPages?: { upstream: Upstream; statuses: number[]; headers: Record<string, string> };
  /** Set by resolveUpstreams, instead of upstream, when the rule chooses a handler kind: its entry and upstreams. */
  handler?: { entry: Route['handler']; upstreams: Upstream[] };
  /** Set by attachPlugins. */
  plugins: PluginInstance[];
  /** On a route addPluginPaths added: where the GatewayRoute names the plugin that asked, and its field in words. */
  ownPath?: { field: string; what: string };
  /** Set by addPluginPaths: the ids of the added routes this route's callers are sent to. */
  needs?: string[];
}

export interface CompileState {
  model: Model;
  drafts: readonly Draft[];
  diagnostics: readonly Diagnostic[];
  /** Set by collectCertificates. */
  certificates?: readonly Certificate[];
}

export type Pass = (state: CompileState) => CompileState;

/** "spec.routes[1].paths[0]": where a draft's match was written (a version's path prefix: there). */
export function pathField(d: Draft): string {
  if (d.ownPath) return d.ownPath.field;
  if (d.route.field !== undefined) return d.route.field;
  if (d.selector === 'path') return `spec.versions[${d.version!.index}].path`;
  return `spec.routes[${d.ruleIndex}].paths[${d.matchIndex}]`;
}

/**
 * Adds diagnostics that make their objects invalid and leaves out every draft of those objects:
 * an object is programmed whole or not at all (a half-applied route is harder to reason about).
 */
export function rejectObjects(state: CompileState, found: readonly Diagnostic[]): CompileState {
  if (found.length === 0) return state;
  const rejected = new Set(found.map((d) => refKey(d.object)));
  return {
    ...state,
    drafts: state.drafts.filter((d) => !rejected.has(refKey(d.route.ref))),
    diagnostics: [...state.diagnostics, ...found],
  };
}
