/**
 * buildRuntime: a validated RouteTable → the structures the request path reads. Built once
 * per snapshot, then swapped in by the holder; nothing here runs per request.
 */
import type { PluginInstance, RouteTable } from '../config/route-table.ts';
import type { RequestContext, RequestHook, ResponseHook } from '../pipeline/context.ts';
import { phaseIndex } from '../pipeline/phases.ts';
import { PLUGINS } from '../plugins/index.ts';
import { proxy } from '../upstream/proxy.ts';
import type { PoolRegistry } from '../upstream/pools.ts';
import { hostMatcher, RouteMatcher } from './router.ts';
import type { RuntimeDeps, RuntimeRoute } from './runtime-route.ts';

export interface Runtime {
  hash: string;
  matcher: RouteMatcher;
  routes: RuntimeRoute[];
  upstreamIds: ReadonlySet<string>;
}

function compilePlugins(instances: PluginInstance[], deps: RuntimeDeps) {
  const ordered = instances
    .map((p, i) => ({ p, i, plugin: PLUGINS[p.name] }))
    .sort((a, b) => phaseIndex(a.plugin.phase) - phaseIndex(b.plugin.phase) || a.i - b.i);
  const requestHooks: RequestHook[] = [];
  const responseHooks: ResponseHook[] = [];
  for (const { p, plugin } of ordered) {
    const hooks = plugin.create(p.config, deps);
    if (hooks.onRequest) requestHooks.push(hooks.onRequest);
    if (hooks.onResponse) responseHooks.push(hooks.onResponse);
  }
  return {
    requestHooks: requestHooks.length ? requestHooks : null,
    responseHooks: responseHooks.length ? responseHooks : null,
  };
}

const handlers: Record<RuntimeRoute['entry']['handler']['type'], (ctx: RequestContext) => void> = {
  proxy,
};

export function buildRuntime(
  hash: string,
  table: RouteTable,
  pools: PoolRegistry,
  deps: RuntimeDeps,
): Runtime {
  const upstreams = new Map(table.upstreams.map((u) => [u.id, u]));
  const routes = table.routes.map((entry): RuntimeRoute => {
    const m = entry.match;
    const upstream = upstreams.get(entry.handler.upstream);
    if (upstream === undefined)
      throw new Error(`route ${entry.id}: unknown upstream ${entry.handler.upstream}`);
    return {
      id: entry.id,
      entry,
      methods: m.methods ? new Set(m.methods) : null,
      hosts: m.hosts ? hostMatcher(m.hosts) : null,
      headers: m.headers ? m.headers.map((h) => [h.name, h.value] as const) : null,
      stripLength:
        entry.stripPrefix && m.path.type === 'Prefix' && m.path.value !== '/' ? m.path.value.length : 0,
      ...compilePlugins(entry.plugins, deps),
      handler: handlers[entry.handler.type],
      upstream: pools.get(upstream),
      deps,
    };
  });
  return { hash, matcher: new RouteMatcher(routes), routes, upstreamIds: new Set(upstreams.keys()) };
}
