/**
 * HTTPRoute RequestHeaderModifier and ResponseHeaderModifier filters as plugin instances of the
 * request-transformer and response-transformer (one definition of header editing in the data
 * plane, not a second one for Gateway API). Gateway API's operations map onto theirs:
 *   set    → replace (when present) + add (when absent): the header ends with exactly this value;
 *   add    → append: next to any value already there;
 *   remove → remove.
 * The instance is named after where it is written (httproute.<route>.rule-<i>.filter-<j>: a
 * GatewayPlugin name cannot hold a dot, so no GatewayPlugin shares it) and its source is the
 * HTTPRoute. A value holding "{{" is refused: the transformers would read it as a template.
 */
import { withSortedKeys } from '../../dataplane/config/canonical-json.ts';
import type { GRPCRoute, HTTPRoute, HTTPRouteFilter } from '../api/gateway-api.ts';
import type { ModelPlugin } from '../validate/model.ts';

export const HEADER_FILTERS: ReadonlyMap<
  string,
  {
    field: 'requestHeaderModifier' | 'responseHeaderModifier';
    plugin: 'request-transformer' | 'response-transformer';
  }
> = new Map([
  ['RequestHeaderModifier', { field: 'requestHeaderModifier', plugin: 'request-transformer' }],
  ['ResponseHeaderModifier', { field: 'responseHeaderModifier', plugin: 'response-transformer' }],
]);

interface HeaderModifier {
  set?: { name: string; value: string }[];
  add?: { name: string; value: string }[];
  remove?: string[];
}

function modifierOf(f: HTTPRouteFilter): HeaderModifier | undefined {
  const kind = HEADER_FILTERS.get(f.type);
  return kind && (f[kind.field] as HeaderModifier | undefined);
}

/** Why the filter cannot be served, or undefined. */
export function headerFilterProblem(f: HTTPRouteFilter): string | undefined {
  const m = modifierOf(f);
  if (m === undefined) return `${f.type} without its ${HEADER_FILTERS.get(f.type)?.field}`;
  const templated = [...(m.set ?? []), ...(m.add ?? [])].find((h) => h.value.includes('{{'));
  if (templated) return `the value of ${templated.name} holds "{{", which is not served`;
  return undefined;
}

/** The plugin instances of a rule's header filters, in filter order. */
export function headerFilterPlugins(
  route: HTTPRoute | GRPCRoute,
  filters: readonly HTTPRouteFilter[] | undefined,
  i: number,
): ModelPlugin[] {
  const out: ModelPlugin[] = [];
  (filters ?? []).forEach((f, j) => {
    const kind = HEADER_FILTERS.get(f.type);
    const m = modifierOf(f);
    if (kind === undefined || m === undefined || headerFilterProblem(f)) return;
    out.push(filterPlugin(route, i, j, kind.plugin, headerEdits(m)));
  });
  return out;
}

/**
 * The plugin instance a route's filter makes (header modifiers, CORS), named after where it is
 * written: httproute.<route>.rule-<i>.filter-<j>.
 */
export function filterPlugin(
  route: HTTPRoute | GRPCRoute,
  i: number,
  j: number,
  plugin: ModelPlugin['plugin'],
  config: Record<string, unknown>,
): ModelPlugin {
  const ns = route.metadata.namespace!;
  const name = `${route.kind.toLowerCase()}.${route.metadata.name}.rule-${i}.filter-${j}`;
  return {
    // ref names the instance (attachPlugins makes its id from it); source, the HTTPRoute.
    ref: { kind: route.kind, namespace: ns, name },
    source: {
      kind: route.kind,
      namespace: ns,
      name: route.metadata.name,
      generation: route.metadata.generation ?? 0,
    },
    plugin,
    field: `spec.rules[${i}].filters[${j}]`,
    config,
  };
}

/**
 * A modifier's edits in the transformers' header shape (set → replace + add, add → append,
 * remove → remove), keys sorted: a plugin's config, or a backend's own edits (the proxy's
 * backends[].requestHeaders, backendRefs[].filters).
 */
export function headerEdits(m: HeaderModifier) {
  const pair = (h: { name: string; value: string }) => `${h.name}:${h.value}`;
  return withSortedKeys({
    ...(m.remove?.length && { remove: { headers: [...m.remove] } }),
    ...(m.set?.length && { replace: { headers: m.set.map(pair) }, add: { headers: m.set.map(pair) } }),
    ...(m.add?.length && { append: { headers: m.add.map(pair) } }),
  });
}

/** A backendRef's own request header edits (its RequestHeaderModifier filter; the CRD allows one), or undefined. */
export function backendHeaderEdits(filters: readonly HTTPRouteFilter[] | undefined) {
  const f = (filters ?? []).find((x) => x.type === 'RequestHeaderModifier');
  if (f === undefined || headerFilterProblem(f)) return undefined;
  const edits = headerEdits(modifierOf(f)!);
  return Object.keys(edits).length ? edits : undefined;
}

/** The instance's name: its id is plugin/<namespace>/<name>. */
export function pluginName(p: ModelPlugin): string {
  return p.ref.name;
}
