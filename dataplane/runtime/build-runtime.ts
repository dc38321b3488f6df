/**
 * buildRuntime: a validated RouteTable → the structures the request path reads. Built once
 * per snapshot, then swapped in by the holder; nothing here runs per request.
 *
 * Each GatewayPlugin is created once for the snapshot, however many routes carry it (one jwt
 * token cache, one JWKS fetch), then bound to each route; each handler kind is created once
 * and bound to each route. `close` retires all of them when the snapshot is replaced. The
 * built-in steps a route's entry asks for (builtin-steps.ts) are ordered with its plugins by
 * phase, the same way.
 */
import type { PluginInstance, Route, RouteTable } from '../config/route-table.ts';
import type { LiveHandler } from '../handlers/types.ts';
import { type Phase, phaseIndex } from '../config/phases.ts';
import { pluginManifest } from '../config/catalog.ts';
import type { RequestHook, ResponseHook } from '../pipeline/context.ts';
import type { RuntimeDeps, RuntimeRoute } from '../pipeline/route.ts';
import type { LivePlugin, PluginHooks } from '../plugins/types.ts';
import type { PoolRegistry, UpstreamRuntime } from '../upstream/pools.ts';
import { HANDLERS, PLUGINS } from './registry.ts';
import { headerMatches, hostMatcher, queryMatcher, RouteMatcher } from './router.ts';
import { Certificates } from '../tls/certificates.ts';
import { BUILTIN_STEPS } from './builtin-steps.ts';
import { pathRewrite } from '../upstream/path.ts';
import { buildListenerPorts, type ListenerPort } from './listener-port.ts';

export interface Runtime {
  hash: string;
  /** The routes of the proxy's own ports: those that name no Gateway listener. */
  matcher: RouteMatcher;
  routes: RuntimeRoute[];
  upstreamIds: ReadonlySet<string>;
  /** What the TLS listener presents, by server name. */
  certificates: Certificates;
  /** Whether the TLS listener asks clients for a certificate: a route carries a plugin that reads it (mtls-auth). */
  requestsClientCertificate: boolean;
  /** The Gateway listener ports (table.listeners), by port: what a request on each needs. */
  listenerPorts: ReadonlyMap<number, ListenerPort>;
  /** Retires the snapshot's plugins and handlers (timers, caches). */
  close(): void;
}

export function buildRuntime(
  hash: string,
  table: RouteTable,
  pools: PoolRegistry,
  deps: RuntimeDeps,
  /** The running runtime: its certificates' SecureContexts are reused when their PEM is unchanged. */
  previous: Runtime | null = null,
): Runtime {
  // The proxy's own ports serve the routes and certificates no Gateway listener claims.
  const onListeners = new Set(table.listeners?.flatMap((l) => l.certificates ?? []));
  const certificates = new Certificates(
    (table.certificates ?? []).filter((c) => !onListeners.has(c.id)),
    previous?.certificates ?? null,
  );
  const upstreams = new Map<string, UpstreamRuntime>(table.upstreams.map((u) => [u.id, pools.get(u)]));
  const upstream = (id: string): UpstreamRuntime => {
    const u = upstreams.get(id);
    if (u === undefined) throw new Error(`unknown upstream ${id}`);
    return u;
  };
  const plugins = new Map<string, SharedPlugin>();
  const handlers = new Map<string, LiveHandler<unknown>>();
  const close = closer(plugins, handlers);
  try {
    const routes = table.routes.map((entry) => buildRoute(entry, deps, plugins, handlers, upstream));
    const own = routes.filter((r) => r.entry.listeners === undefined);
    return {
      hash,
      matcher: new RouteMatcher(own),
      routes,
      upstreamIds: new Set(upstreams.keys()),
      certificates,
      requestsClientCertificate: own.some((r) =>
        r.entry.plugins.some((p) => pluginManifest(p.name)?.needs?.clientCertificate === true),
      ),
      listenerPorts: buildListenerPorts(
        table.listeners,
        routes,
        table.certificates,
        previous?.listenerPorts ?? null,
      ),
      close,
    };
  } catch (err) {
    close();
    throw err;
  }
}

/**
 * close() of a runtime. Optimization: made outside buildRuntime so that it holds only what it
 * closes: a closure made there shares its scope (the upstreams of the whole table), and the
 * holder keeps a retired runtime's close() for a grace period.
 */
function closer(plugins: Map<string, SharedPlugin>, handlers: Map<string, LiveHandler<unknown>>): () => void {
  return () => {
    for (const p of plugins.values()) p.live.close?.();
    for (const h of handlers.values()) h.close?.();
  };
}

function buildRoute(
  entry: Route,
  deps: RuntimeDeps,
  plugins: Map<string, SharedPlugin>,
  handlers: Map<string, LiveHandler<unknown>>,
  upstream: (id: string) => UpstreamRuntime,
): RuntimeRoute {
  const m = entry.match;
  const rewritePath = pathRewrite(m.path, entry.stripPrefix, entry.rewrite);
  const kind = entry.handler.type;
  let live = handlers.get(kind);
  if (live === undefined) {
    live = HANDLERS.get(kind)!.handler.create({ ...deps, upstream });
    handlers.set(kind, live);
  }
  const chain = bindSteps(entry, deps, plugins);
  return {
    id: entry.id,
    entry,
    methods: m.methods ? new Set(m.methods) : null,
    // A route of Gateway listeners reads its hostnames as Gateway API does (route-table.ts).
    hosts: m.hosts ? hostMatcher(m.hosts, entry.listeners !== undefined) : null,
    headers: m.headers ? headerMatches(m.headers) : null,
    cookies: m.cookies ? m.cookies.map((c) => [c.name, c.value] as const) : null,
    query: m.query ? queryMatcher(m.query) : null,
    rewritePath,
    requestHooks: chain.requestHooks.length ? chain.requestHooks : null,
    responseHooks: chain.responseHooks.length ? chain.responseHooks : null,
    maxBodyBytes: Math.min(deps.limits.maxBodyBytes, chain.maxBodyBytes),
    bodyAt: chain.bodyAt >= 0 ? chain.bodyAt : handlerNeedsBody(entry) ? chain.requestHooks.length : -1,
    handler: live.bind(entry, entry.handler, rewritePath),
    answersPreflight: chain.preflight,
    chain: [...chain.names, kind],
    logRate: logRate(entry.id, deps),
    deps,
  };
}

/** Whether the route's handler reads the request body whole (its manifest says so, for every entry or this one). */
function handlerNeedsBody(entry: Route): boolean {
  const needs = HANDLERS.get(entry.handler.type)!.manifest.needs?.requestBody as
    | boolean
    | ((h: Route['handler']) => boolean)
    | undefined;
  return typeof needs === 'function' ? needs(entry.handler) : needs === true;
}

/** A step of the route, not yet bound: one of its plugins, or a built-in step its entry asks for. */
interface Step {
  name: string;
  phase: Phase;
  /** Its place in the route's table order: within a phase, steps keep it. */
  at: number;
  needsBody: boolean;
  bind(): PluginHooks;
}

/**
 * The route's steps (its plugins and the built-in steps its entry asks for) in phase order (the
 * table's order within a phase), each bound to the route.
 */
function bindSteps(entry: Route, deps: RuntimeDeps, plugins: Map<string, SharedPlugin>) {
  const steps: Step[] = entry.plugins.map((p, i) => {
    const loaded = PLUGINS.get(p.name)!;
    return {
      name: p.name,
      phase: loaded.manifest.phase,
      at: i,
      needsBody: loaded.manifest.needs?.requestBody === true,
      bind: () => {
        const shared = instance(p, deps, plugins, loaded.plugin);
        // The route's entry keeps the first route's copy of an identical plugin entry: the parsed
        // snapshot holds one per route (5,000 routes sharing a key-auth plugin: ~5 MB of heap).
        entry.plugins[i] = shared.entry;
        return shared.live.bind(entry);
      },
    };
  });
  for (const b of BUILTIN_STEPS) {
    const hooks = b.bind(entry, deps);
    if (hooks !== null)
      steps.push({ name: b.name, phase: b.phase, at: steps.length, needsBody: false, bind: () => hooks });
  }
  steps.sort((a, b) => phaseIndex(a.phase) - phaseIndex(b.phase) || a.at - b.at);
  const requestHooks: RequestHook[] = [];
  const responseHooks: ResponseHook[] = [];
  const names: string[] = [];
  let bodyAt = -1;
  let preflight = false;
  let maxBodyBytes = Number.POSITIVE_INFINITY;
  for (const step of steps) {
    if (step.phase === 'cors-preflight') preflight = true;
    const hooks = step.bind();
    names.push(step.name);
    if (bodyAt < 0 && step.needsBody) bodyAt = requestHooks.length;
    if (hooks.onRequest) requestHooks.push(hooks.onRequest);
    if (hooks.onResponse) responseHooks.push(hooks.onResponse);
    if (hooks.maxBodyBytes !== undefined) maxBodyBytes = Math.min(maxBodyBytes, hooks.maxBodyBytes);
  }
  return { requestHooks, responseHooks, names, bodyAt, preflight, maxBodyBytes };
}

/** A live plugin and the first route entry's copy of its table entry. */
interface SharedPlugin {
  live: LivePlugin;
  entry: PluginInstance;
}

/** One live plugin per GatewayPlugin (id) and config: routes that share the object share it. */
/** Each build's plugins by instance object (keyed by that build's map, so it goes with it). */
const sharedByObject = new WeakMap<Map<string, SharedPlugin>, Map<PluginInstance, SharedPlugin>>();

function instance(
  p: PluginInstance,
  deps: RuntimeDeps,
  plugins: Map<string, SharedPlugin>,
  plugin: { create(config: unknown, deps: RuntimeDeps, self: { id: string }): LivePlugin },
): SharedPlugin {
  // Optimization: a pushed table shares one object per instance (config/wire.ts), so the object
  // finds it without a JSON text of its config per route; equal copies still meet by text.
  const seen = sharedByObject.get(plugins)?.get(p);
  if (seen !== undefined) return seen;
  const key = `${p.name}\n${p.id}\n${JSON.stringify(p.config)}\n${JSON.stringify(p.source)}`;
  let shared = plugins.get(key);
  if (shared === undefined) {
    shared = { live: plugin.create(p.config, deps, { id: p.id }), entry: p };
    plugins.set(key, shared);
  }
  let byObject = sharedByObject.get(plugins);
  if (byObject === undefined) {
    byObject = new Map();
    sharedByObject.set(plugins, byObject);
  }
  byObject.set(p, shared);
  return shared;
}

/** The route's access-log rate: null with the access log off or for a silenced route id, else the sample. */
function logRate(id: string, deps: RuntimeDeps): number | null {
  if (!deps.accessLog || deps.accessLogOff?.some((p) => id.startsWith(p))) return null;
  return Math.min(1, Math.max(0, deps.accessLogSample ?? 1));
}
