/** Route tables written by hand for data-plane tests (the controller's output is tested by the golden files). */
import { tableHash } from '../../dataplane/config/wire.ts';
import type { RuntimeRoute } from '../../dataplane/pipeline/route.ts';
import { headerMatches, hostMatcher, queryMatcher } from '../../dataplane/runtime/router.ts';
import type {
  Listener,
  PluginInstance,
  Route,
  RouteTable,
  Snapshot,
  Upstream,
} from '../../dataplane/config/route-table.ts';

export function upstream(id: string, url: string, timeouts: Partial<Upstream['timeouts']> = {}): Upstream {
  return { id, url, timeouts: { connectMs: 2_000, responseMs: 10_000, idleMs: 10_000, ...timeouts } };
}

export function route(
  name: string,
  upstreamId: string,
  path: string,
  opts: Partial<Omit<Route, 'id' | 'source' | 'handler'>> & { type?: 'Exact' | 'Prefix' } = {},
): Route {
  const { type = 'Prefix', match, ...rest } = opts;
  return {
    id: `route/test/${name}/${name}/0`,
    source: { kind: 'GatewayRoute', namespace: 'test', name, generation: 1 },
    match: { path: { type, value: path }, ...match },
    stripPrefix: false,
    plugins: [],
    handler: { type: 'proxy', upstream: upstreamId },
    ...rest,
  };
}

export function transformer(name: string, config: Record<string, unknown>): PluginInstance {
  return {
    id: `plugin/test/${name}`,
    name: 'request-transformer',
    config,
    source: { kind: 'GatewayPlugin', namespace: 'test', name, generation: 1 },
  };
}

/** `more`: the table's Gateway listeners and certificates, when it has any. */
export function snapshot(
  routes: Route[],
  upstreams: Upstream[],
  more: Pick<RouteTable, 'listeners' | 'certificates'> = {},
): Snapshot {
  const table: RouteTable = { version: 1, routes, upstreams, ...more };
  return { hash: tableHash(table), table };
}

/** A Gateway listener `name` of Gateway test/gw: HTTP unless it names certificates (then HTTPS). */
export function listener(
  name: string,
  port: number,
  opts: {
    hostname?: string;
    certificates?: string[];
    protocol?: 'HTTP' | 'HTTPS';
    clientValidation?: Listener['clientValidation'];
  } = {},
): Listener {
  const { protocol = opts.certificates ? 'HTTPS' : 'HTTP', ...rest } = opts;
  return { id: `listener/test/gw/${name}`, port, protocol, ...rest };
}

export function idempotencyPlugin(name: string, config: Record<string, unknown> = {}): PluginInstance {
  return {
    id: `plugin/test/${name}`,
    name: 'idempotency',
    config,
    source: { kind: 'GatewayPlugin', namespace: 'test', name, generation: 1 },
  };
}

export function rateLimitPlugin(name: string, config: Record<string, unknown>): PluginInstance {
  return {
    id: `plugin/test/${name}`,
    name: 'rate-limiting',
    config,
    source: { kind: 'GatewayPlugin', namespace: 'test', name, generation: 1 },
  };
}

/** A GatewayPlugin instance of any plugin, named `name` in namespace test. */
export function pluginInstance(
  name: string,
  plugin: string,
  config: Record<string, unknown>,
): PluginInstance {
  return {
    id: `plugin/test/${name}`,
    name: plugin,
    config,
    source: { kind: 'GatewayPlugin', namespace: 'test', name, generation: 1 },
  } as PluginInstance;
}

/** What RouteMatcher reads of a route: its match, compiled as buildRuntime does (hosts as GatewayRoutes'; `anyLabels` as a Gateway API route's). */
export function routeMatcherInput(entry: Route, anyLabels = false): RuntimeRoute {
  const m = entry.match;
  return {
    id: entry.id,
    entry,
    methods: m.methods ? new Set(m.methods) : null,
    hosts: m.hosts ? hostMatcher(m.hosts, anyLabels) : null,
    headers: m.headers ? headerMatches(m.headers) : null,
    cookies: m.cookies ? m.cookies.map((c) => [c.name, c.value] as const) : null,
    query: m.query ? queryMatcher(m.query) : null,
  } as RuntimeRoute;
}
