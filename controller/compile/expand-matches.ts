/**
 * Pass 1: one draft per path of each route rule; the match-index is the path's index in the
 * rule. Methods upper-case, hosts and header names lower-case, each list de-duplicated and
 * sorted: they are sets, and reordering them in YAML must not change the hash. An empty list
 * means the same as an absent one (any).
 */
import { parseDuration } from '../../dataplane/config/duration.ts';
import type { RouteMatch } from '../../dataplane/config/route-table.ts';
import type { RouteRule } from '../api/gateway-route.ts';
import type { Draft, Pass } from './draft.ts';

export const expandMatches: Pass = (state) => {
  const drafts: Draft[] = [];
  for (const route of state.model.routes) {
    const { namespace, name } = route.ref;
    // An HTTPRoute may share its namespace and name with a GatewayRoute: the ids must differ.
    const kind = route.ref.kind === 'GatewayRoute' ? 'route' : route.ref.kind.toLowerCase();
    route.spec.routes.forEach((rule, ruleIndex) => {
      rule.paths.forEach((path, matchIndex) => {
        drafts.push({
          id: `${kind}/${namespace}/${name}/${rule.name}/${matchIndex}`,
          route,
          ruleIndex,
          matchIndex,
          routeName: rule.name,
          namespace,
          name,
          createdMs: route.createdMs,
          ...(route.ruleIndex !== undefined && { gatewayApiRule: route.ruleIndex }),
          match: matchOf(rule, path, route.regex === true, route.cookies),
          stripPrefix: rule.stripPrefix ?? false,
          httpsRedirect: rule.httpsRedirect ?? false,
          ...(rule.websocket && { websocket: webSocketSettings(rule.websocket) }),
          plugins: [],
        });
      });
    });
  }
  return { ...state, drafts };
};

function webSocketSettings(ws: NonNullable<RouteRule['websocket']>): NonNullable<Draft['websocket']> {
  return {
    ...(ws.idleTimeout !== undefined && { idleTimeoutMs: parseDuration(ws.idleTimeout)! }),
    ...(ws.maxMessageBytes !== undefined && { maxMessageBytes: ws.maxMessageBytes }),
    ...(ws.allowedOrigins?.length && { allowedOrigins: setOf(ws.allowedOrigins) }),
  };
}

function matchOf(
  rule: RouteRule,
  path: string,
  regex: boolean,
  cookies: readonly { name: string; value: string }[] | undefined,
): RouteMatch {
  // Keyed by name, type and value: a pattern and an exact value of the same text are two matches.
  const headers =
    rule.headers?.length &&
    setOf(
      rule.headers.map(
        (h) => `${h.name.toLowerCase()}\n${h.type === 'RegularExpression' ? 'R' : 'E'}${h.value}`,
      ),
    ).map((k) => {
      const [name, typed] = splitOnce(k);
      const value = typed.slice(1);
      return typed[0] === 'R' ? { name, type: 'RegularExpression' as const, value } : { name, value };
    });
  // Only the first entry of a name counts (Gateway API's rule for repeated names); sorted by name.
  const named = new Set<string>();
  const query = (rule.query ?? [])
    .filter((q) => !named.has(q.name) && named.add(q.name))
    .map((q) => ({ name: q.name, ...(q.type === 'RegularExpression' && { type: q.type }), value: q.value }))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  // Keys in sorted order: see tableOf in compile/index.ts.
  return {
    ...(cookies?.length && {
      cookies: [...cookies].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)),
    }),
    ...(headers && { headers }),
    ...(rule.hosts?.length && { hosts: setOf(rule.hosts.map((h) => h.toLowerCase())) }),
    ...(rule.methods?.length && { methods: setOf(rule.methods.map((m) => m.toUpperCase())) }),
    path: regex
      ? { type: 'RegularExpression', value: path }
      : { type: rule.pathType ?? 'Prefix', value: path },
    ...(query.length && { query }),
  };
}

function splitOnce(key: string): [string, string] {
  const i = key.indexOf('\n');
  return [key.slice(0, i), key.slice(i + 1)];
}

// Code-unit order, never localeCompare: the table must not depend on the machine's locale.
function setOf(values: string[]): string[] {
  return [...new Set(values)].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}
