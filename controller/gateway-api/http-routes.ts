/**
 * HTTPRoutes → ModelRoutes (the model GatewayRoutes become, so one compile serves both) and each
 * route's status.parents. Pure.
 *
 * Attachment, per parentRef to a Gateway of Sluice's (other parents are other controllers'):
 * the listeners it names (sectionName, port; all when neither), then those whose allowedRoutes
 * take an HTTPRoute from the route's namespace, then those whose hostname intersects the
 * route's (hostnames.ts); of an accepted Gateway, a listener that is not served takes routes
 * too (counted in its attachedRoutes, in no table entry). Accepted is False NoMatchingParent,
 * NotAllowedByListeners or NoMatchingListenerHostname when a step leaves none, UnsupportedValue
 * when the route asks for what Sluice does not serve yet. ResolvedRefs (the same for every parent): False InvalidKind
 * (a backendRef that is not a Service), RefNotPermitted (another namespace without a
 * ReferenceGrant), BackendNotFound (no such Service or port). A rule none of whose backends
 * resolves still matches its requests and answers 500 (SLC_ERR_BACKEND_INVALID), rather than
 * letting them fall through to another route; beside valid ones, an invalid backend's share of
 * the requests answers 500.
 *
 * Each rule becomes one ModelRoute per set of listeners sharing the same effective hostnames,
 * with one GatewayRoute-shaped rule per match (path, headers, query, method) and the rule's
 * ExtensionRef GatewayPlugins as its plugins.
 */
import type { RouteRule } from '../api/gateway-route.ts';
import {
  GATEWAY_API_GROUP,
  type GRPCRoute,
  type GRPCRouteMatch,
  type GRPCRouteRule,
  type HTTPBackendRef,
  type HTTPRoute,
  type HTTPRouteFilter,
  type HTTPRouteRule,
  type ParentReference,
} from '../api/gateway-api.ts';
import { GROUP } from '../api/common.ts';
import { keyOf, type ResourceSet } from '../source/resource-set.ts';
import type { Endpoint } from '../validate/endpoints.ts';
import type { HeaderEdits, ModelPlugin, ModelRoute } from '../validate/model.ts';
import { resolveServiceBackend } from '../validate/service-backend.ts';
import { condition, type RouteParentStatus, type RouteStatus } from './conditions.ts';
import { admitsNamespace, type ModelListener, type TranslatedGateways } from './gateways.ts';
import {
  backendHeaderEdits,
  HEADER_FILTERS,
  headerFilterPlugins,
  headerFilterProblem,
  pluginName,
} from './header-filters.ts';
import { grpcMatchesOf, grpcMatchProblem } from './grpc-matches.ts';
import { intersectHostnames } from './hostnames.ts';
import { INVALID_BACKEND, NO_BACKEND, redirectEntry, redirectProblem } from './redirects.ts';
import { referencePermitted } from './reference-grants.ts';
import { urlRewriteEntry, urlRewriteProblem } from './url-rewrites.ts';
import { mirrorProblem, mirrorRefs } from './mirrors.ts';
import { corsFilterPlugins, corsFilterProblem } from './cors-filters.ts';
import { timeoutsOf, timeoutsProblem } from './timeouts.ts';
import { retriesOf, retryProblem } from './retries.ts';
import { regexProblem } from '../../dataplane/config/regex.ts';

export interface TranslatedRoutes {
  routes: ModelRoute[];
  /** Plugin instances made from header-modifier filters, by "namespace/name" (header-filters.ts). */
  plugins: Map<string, ModelPlugin>;
  /** By HTTPRoute "namespace/name": only routes with a parent of Sluice's. */
  status: Map<string, RouteStatus>;
  /** The same for GRPCRoutes. */
  grpcStatus: Map<string, RouteStatus>;
}

/** The two route kinds, which attach, resolve and report alike; only their matches differ. */
type AnyRoute = HTTPRoute | GRPCRoute;

interface Attachment {
  listener: ModelListener;
  hosts: string[] | undefined;
}

export function translateHttpRoutes(
  set: ResourceSet,
  gateways: TranslatedGateways,
  plugins: ReadonlyMap<string, ModelPlugin>,
): TranslatedRoutes {
  const routes: ModelRoute[] = [];
  const status = new Map<string, RouteStatus>();
  const grpcStatus = new Map<string, RouteStatus>();
  const attached = new Map<ModelListener, number>();
  const made = new Map<string, ModelPlugin>();
  const all: [string, AnyRoute][] = [...set.httpRoutes, ...set.grpcRoutes];
  for (const [key, route] of all) {
    const ns = route.metadata.namespace!;
    const gen = route.metadata.generation ?? 0;
    const refs = resolvedRefs(set, route, plugins);
    const unsupported = unsupportedIn(route);
    const parents: RouteParentStatus[] = [];
    const attachments: Attachment[] = [];
    for (const parentRef of route.spec.parentRefs ?? []) {
      if (
        (parentRef.group ?? GATEWAY_API_GROUP) !== GATEWAY_API_GROUP ||
        (parentRef.kind ?? 'Gateway') !== 'Gateway'
      )
        continue;
      const gw = gateways.gateways.get(keyOf(parentRef.namespace ?? ns, parentRef.name));
      if (gw === undefined) continue; // not a Gateway of Sluice's: not ours to report on
      const gatewayAccepted = gw.status.conditions.some((c) => c.type === 'Accepted' && c.status === 'True');
      const outcome = attach(
        route,
        parentRef,
        gw.listeners,
        gatewayAccepted,
        (n) => set.namespaces.get(n)?.metadata.labels,
      );
      const accepted =
        typeof outcome === 'string'
          ? condition('Accepted', false, outcome, acceptMessage(outcome, parentRef, gatewayAccepted), gen)
          : unsupported
            ? condition('Accepted', false, 'UnsupportedValue', unsupported, gen)
            : condition('Accepted', true, 'Accepted', 'The route is attached.', gen);
      parents.push({
        parentRef: parentRefOf(parentRef, ns),
        controllerName: gateways.controllerName,
        conditions: [
          accepted,
          refs.problem
            ? condition('ResolvedRefs', false, refs.problem.reason, refs.problem.message, gen)
            : condition('ResolvedRefs', true, 'ResolvedRefs', 'All references resolved.', gen),
        ],
      });
      if (typeof outcome === 'string' || unsupported) continue;
      for (const a of outcome) {
        if (attachments.some((b) => b.listener === a.listener)) continue;
        attachments.push(a);
        attached.set(a.listener, (attached.get(a.listener) ?? 0) + 1);
      }
    }
    if (parents.length === 0) continue;
    (route.kind === 'GRPCRoute' ? grpcStatus : status).set(key, { observedGeneration: gen, parents });
    // Only served listeners are in the table; the others count the route but do not route it.
    const served = attachments.filter((a) => a.listener.served);
    if (served.length === 0) continue;
    const filters = (route.spec.rules ?? []).map((rule, i) => [
      ...headerFilterPlugins(route, rule.filters, i),
      ...corsFilterPlugins(route, rule.filters, i),
    ]);
    for (const p of filters.flat()) made.set(`${p.ref.namespace}/${pluginName(p)}`, p);
    routes.push(...modelRoutes(route, served, refs, filters));
  }
  for (const { status: gs, listeners } of gateways.gateways.values())
    listeners.forEach((l, i) => {
      gs.listeners[i].attachedRoutes = attached.get(l) ?? 0;
    });
  return { routes, status, grpcStatus, plugins: made };
}

/**
 * The listeners a parentRef attaches the route to, or why none. Of an accepted Gateway, a
 * listener that is not served (its certificate does not resolve, a conflict) still takes routes
 * as its allowedRoutes say: the spec counts them in its attachedRoutes whatever its conditions.
 */
function attach(
  route: AnyRoute,
  ref: ParentReference,
  listeners: readonly ModelListener[],
  gatewayAccepted: boolean,
  labelsOf: (namespace: string) => Record<string, string> | undefined,
): Attachment[] | 'NoMatchingParent' | 'NotAllowedByListeners' | 'NoMatchingListenerHostname' {
  const named = listeners.filter(
    (l) =>
      (ref.sectionName === undefined || l.spec.name === ref.sectionName) &&
      (ref.port === undefined || l.spec.port === ref.port),
  );
  if (named.length === 0) return 'NoMatchingParent';
  const ns = route.metadata.namespace!;
  const allowed = named.filter(
    (l) =>
      (l.served || gatewayAccepted) &&
      l.kinds.includes(route.kind) &&
      admitsNamespace(l, ns, (n) => labelsOf(n) ?? {}),
  );
  if (allowed.length === 0) return 'NotAllowedByListeners';
  const out: Attachment[] = [];
  for (const listener of allowed) {
    const hosts = intersectHostnames(listener.hostname, route.spec.hostnames);
    if (hosts === undefined || hosts.length > 0) out.push({ listener, hosts });
  }
  return out.length ? out : 'NoMatchingListenerHostname';
}

function acceptMessage(reason: string, ref: ParentReference, gatewayAccepted: boolean): string {
  const what = `Gateway ${ref.name}${ref.sectionName ? ` listener ${ref.sectionName}` : ''}${ref.port ? ` port ${ref.port}` : ''}`;
  if (reason === 'NoMatchingParent') return `${what}: no such listener`;
  if (reason === 'NotAllowedByListeners')
    return gatewayAccepted
      ? `${what}: no listener allows this route (namespace or kind)`
      : `${what}: the Gateway is not accepted and serves no route (see its Accepted condition)`;
  return `${what}: no listener hostname intersects the route's hostnames`;
}

/** The parentRef as status writes it: group, kind and namespace filled in. */
function parentRefOf(ref: ParentReference, ns: string): ParentReference {
  return {
    group: ref.group ?? GATEWAY_API_GROUP,
    kind: ref.kind ?? 'Gateway',
    name: ref.name,
    namespace: ref.namespace ?? ns,
    ...(ref.sectionName !== undefined && { sectionName: ref.sectionName }),
    ...(ref.port !== undefined && { port: ref.port }),
  };
}

/** Where a backendRef goes: its Service URL, ready endpoints (undefined: none known), weight. */
interface Backend {
  /** HTTP/2 with prior knowledge (GRPCRoute, or appProtocol kubernetes.io/h2c). */
  protocol?: 'h2c';
  service: string;
  url: string;
  endpoints: readonly Endpoint[] | undefined;
  weight: number;
  /** Its own RequestHeaderModifier (backendRefs[].filters), as the proxy's backends[].requestHeaders. */
  requestHeaders?: HeaderEdits;
}

/** A RequestMirror's Service, resolved, and the share of the requests it gets a copy of. */
interface Mirror extends Backend {
  fraction?: { numerator: number; denominator: number };
}

/** A backendRef that does not resolve, beside valid ones: its share of the rule's requests answers 500. */
interface InvalidShare {
  invalid: true;
  weight: number;
}

/**
 * Per rule, its backends with a weight above 0, or null when none can be served (no
 * backendRefs, every one invalid or weighted 0, an ExtensionRef that does not resolve): Gateway
 * API's 500. An invalid backendRef beside valid ones keeps its share, answered 500 as the spec
 * says. And the first problem, for ResolvedRefs.
 */
function resolvedRefs(
  set: ResourceSet,
  route: AnyRoute,
  plugins: ReadonlyMap<string, ModelPlugin>,
): {
  backends: ((Backend | InvalidShare)[] | null)[];
  mirrors: Mirror[][];
  problem?: { reason: string; message: string };
} {
  const ns = route.metadata.namespace!;
  let problem: { reason: string; message: string } | undefined;
  const note = (reason: string, message: string) => {
    problem ??= { reason, message };
  };
  const resolve = (ref: HTTPBackendRef, at: string): Backend | null => {
    const refNs = ref.namespace ?? ns;
    if ((ref.group ?? '') !== '' || (ref.kind ?? 'Service') !== 'Service') {
      note(
        'InvalidKind',
        `${at}: ${ref.group ?? ''}/${ref.kind} is not a kind of backend Sluice reaches (Service is)`,
      );
      return null;
    }
    const permitted = referencePermitted(
      set.referenceGrants,
      { group: GATEWAY_API_GROUP, kind: route.kind, namespace: ns },
      { group: '', kind: 'Service', namespace: refNs, name: ref.name },
    );
    if (!permitted) {
      note(
        'RefNotPermitted',
        `${at}: Service ${refNs}/${ref.name} is in another namespace and no ReferenceGrant there allows it`,
      );
      return null;
    }
    const backend = resolveServiceBackend(set, refNs, ref.name, { number: ref.port });
    if (typeof backend === 'string') {
      note('BackendNotFound', `${at}: ${backend}`);
      return null;
    }
    const edits = backendHeaderEdits(ref.filters);
    // gRPC is HTTP/2; an HTTPRoute's Service port may say it speaks h2c (appProtocol).
    const h2c = route.kind === 'GRPCRoute' || backend.protocol === 'h2c';
    return {
      ...backend,
      ...(h2c && { protocol: 'h2c' as const }),
      weight: ref.weight ?? 1,
      ...(edits && { requestHeaders: edits }),
    };
  };
  const backends = (route.spec.rules ?? []).map((rule, i): (Backend | InvalidShare)[] | null => {
    // An ExtensionRef's GatewayPlugin must be accepted, else the rule answers 500.
    const missing = pluginsOf(rule).find((p) => !plugins.has(keyOf(ns, p.name)));
    if (missing) {
      note(
        'InvalidKind',
        `spec.rules[${i}].filters: GatewayPlugin ${ns}/${missing.name} not found or not accepted`,
      );
      return null;
    }
    const shares = (rule.backendRefs ?? []).flatMap((ref, j): (Backend | InvalidShare)[] => {
      const b = resolve(ref, `spec.rules[${i}].backendRefs[${j}]`);
      const weight = ref.weight ?? 1;
      return weight === 0 ? [] : [b ?? { invalid: true, weight }];
    });
    return shares.some((b) => !('invalid' in b)) ? shares : null;
  });
  // A mirror that does not resolve is left out (ResolvedRefs says why); the rule serves on.
  const mirrors = (route.spec.rules ?? []).map((rule, i) =>
    route.kind !== 'HTTPRoute'
      ? []
      : mirrorRefs(rule as HTTPRouteRule, i).flatMap((m): Mirror[] => {
          const b = resolve({ ...m.ref, weight: 1 }, m.at);
          return b ? [{ ...b, ...(m.fraction && { fraction: m.fraction }) }] : [];
        }),
  );
  return { backends, mirrors, ...(problem && { problem }) };
}

/** What the route asks for that Sluice does not serve yet; undefined when nothing. */
function unsupportedIn(route: AnyRoute): string | undefined {
  for (const [i, rule] of (route.spec.rules ?? []).entries()) {
    const at = `spec.rules[${i}]`;
    for (const [j, f] of (rule.filters ?? []).entries()) {
      if (HEADER_FILTERS.has(f.type)) {
        const problem = headerFilterProblem(f);
        if (problem) return `${at}.filters[${j}]: ${problem}`;
      } else if (f.type === 'RequestRedirect' && route.kind === 'HTTPRoute') {
        const problem = redirectProblem(f);
        if (problem) return `${at}.filters[${j}]: ${problem}`;
      } else if (f.type === 'CORS' && route.kind === 'HTTPRoute') {
        const problem = corsFilterProblem(f);
        if (problem) return `${at}.filters[${j}]: ${problem}`;
      } else if (f.type === 'RequestMirror' && route.kind === 'HTTPRoute') {
        const problem = mirrorProblem(f);
        if (problem) return `${at}.filters[${j}]: ${problem}`;
      } else if (f.type === 'URLRewrite' && route.kind === 'HTTPRoute') {
        const problem = urlRewriteProblem(f, rule as HTTPRouteRule);
        if (problem) return `${at}.filters[${j}]: ${problem}`;
      } else if (f.type !== 'ExtensionRef') return `${at}.filters: ${f.type} is not supported yet`;
      else if (f.extensionRef?.group !== GROUP || f.extensionRef.kind !== 'GatewayPlugin')
        return `${at}.filters: an ExtensionRef to ${f.extensionRef?.group}/${f.extensionRef?.kind} (sluice.dev/GatewayPlugin is served)`;
    }
    if ((rule.backendRefs ?? []).length > 16) return `${at}.backendRefs: more than 16 backends`;
    const timeouts = route.kind === 'HTTPRoute' ? timeoutsProblem(rule as HTTPRouteRule) : undefined;
    if (timeouts) return `${at}.${timeouts}`;
    const retry = route.kind === 'HTTPRoute' ? retryProblem(rule as HTTPRouteRule) : undefined;
    if (retry) return `${at}.${retry}`;
    for (const [j, b] of (rule.backendRefs ?? []).entries())
      for (const [k, f] of (b.filters ?? []).entries()) {
        const bf = `${at}.backendRefs[${j}].filters[${k}]`;
        if (f.type !== 'RequestHeaderModifier')
          return `${bf}: ${f.type} on a backendRef is not supported yet`;
        const problem = headerFilterProblem(f);
        if (problem) return `${bf}: ${problem}`;
      }
    if (route.kind === 'GRPCRoute') {
      for (const [j, m] of (rule.matches ?? []).entries()) {
        const problem = grpcMatchProblem(m as GRPCRouteMatch);
        if (problem) return `${at}.matches[${j}].${problem}`;
      }
      continue;
    }
    for (const [j, m] of ((rule as HTTPRouteRule).matches ?? []).entries()) {
      if (m.path?.type === 'RegularExpression')
        return `${at}.matches[${j}].path: RegularExpression is not supported`;
      for (const [k, h] of (m.headers ?? []).entries()) {
        const problem = h.type === 'RegularExpression' ? regexProblem(h.value) : undefined;
        if (problem) return `${at}.matches[${j}].headers[${k}].value ${problem}`;
      }
      for (const [k, q] of (m.queryParams ?? []).entries()) {
        const problem = q.type === 'RegularExpression' ? regexProblem(q.value) : undefined;
        if (problem) return `${at}.matches[${j}].queryParams[${k}].value ${problem}`;
      }
    }
  }
  return undefined;
}

function modelRoutes(
  route: AnyRoute,
  attachments: readonly Attachment[],
  refs: { backends: readonly ((Backend | InvalidShare)[] | null)[]; mirrors: readonly Mirror[][] },
  filters: readonly ModelPlugin[][],
): ModelRoute[] {
  const { backends } = refs;
  const ns = route.metadata.namespace!;
  const name = route.metadata.name;
  const created = route.metadata.creationTimestamp
    ? Date.parse(route.metadata.creationTimestamp)
    : Number.NaN;
  // Listeners where the route serves the same host names share its entries.
  const groups = new Map<string, { hosts: string[] | undefined; listeners: string[] }>();
  for (const a of attachments) {
    const k = a.hosts?.join(',') ?? '*';
    const g = groups.get(k) ?? { hosts: a.hosts, listeners: [] };
    g.listeners.push(a.listener.id);
    groups.set(k, g);
  }
  const out: ModelRoute[] = [];
  (route.spec.rules ?? []).forEach((rule, i) => {
    // A redirect answers by itself; a rule without a valid backend answers 500 (the spec's).
    const redirect = route.kind === 'HTTPRoute' ? redirectEntry(rule as HTTPRouteRule) : undefined;
    const rewrite = route.kind === 'HTTPRoute' ? urlRewriteEntry(rule as HTTPRouteRule) : undefined;
    const timeouts = route.kind === 'HTTPRoute' ? timeoutsOf(rule as HTTPRouteRule) : undefined;
    const retries = route.kind === 'HTTPRoute' ? retriesOf(rule as HTTPRouteRule) : undefined;
    const entry = redirect ?? (backends[i] === null ? INVALID_BACKEND : undefined);
    const shares = entry ? [] : backends[i]!;
    const weighted = shares.filter((b): b is Backend => !('invalid' in b));
    const backend = weighted[0] ?? NO_BACKEND;
    // A rule answering by itself copies nothing.
    const mirrors = entry ? [] : refs.mirrors[i];
    const called = [...weighted, ...mirrors];
    const endpoints = new Map(called.flatMap((b) => (b.endpoints ? [[b.url, b.endpoints] as const] : [])));
    [...groups.values()].forEach((group, g) => {
      const suffix = groups.size > 1 ? `-hosts-${g}` : '';
      const matches =
        route.kind === 'GRPCRoute' ? grpcMatchesOf(rule as GRPCRouteRule) : matchesOf(rule as HTTPRouteRule);
      // One host per entry when there are several: Gateway API ranks routes by the host name
      // that matched before any match rule (compile/precedence.ts, rule 0).
      const hostSets = group.hosts && group.hosts.length > 1 ? group.hosts.map((h) => [h]) : [group.hosts];
      const rules = matches.flatMap((m, j) =>
        hostSets.map(
          (hosts, h): RouteRule => ({
            name: `rule-${i}-match-${j}${suffix}${hostSets.length > 1 ? `-host-${h}` : ''}`,
            paths: [m.path],
            pathType: m.pathType,
            ...(m.method && { methods: [m.method as NonNullable<RouteRule['methods']>[number]] }),
            ...(m.headers.length && { headers: m.headers }),
            ...(m.query?.length && { query: m.query }),
            ...(hosts && { hosts }),
            // A 500 runs no plugin (one it names may be what does not resolve).
            ...(entry !== INVALID_BACKEND &&
              (pluginsOf(rule).length || filters[i].length) && {
                plugins: [...filters[i].map((p) => ({ name: pluginName(p) })), ...pluginsOf(rule)],
              }),
          }),
        ),
      );
      out.push({
        ref: { kind: route.kind, namespace: ns, name },
        source: { kind: route.kind, namespace: ns, name, generation: route.metadata.generation ?? 0 },
        createdMs: Number.isNaN(created) ? undefined : created,
        spec: {
          service: {
            name: backend.service,
            url: backend.url,
            ...(timeouts && { timeouts }),
            ...(retries && { retries }),
          },
          routes: rules,
        },
        upstreamUrl: backend.url,
        handlers: rules.map(() => (entry ? { kind: entry.type, config: undefined, urls: [], entry } : null)),
        certificates: [],
        ...(endpoints.size && { endpoints }),
        ...(called.some((b) => b.protocol) && {
          protocols: new Map(called.flatMap((b) => (b.protocol ? [[b.url, b.protocol] as const] : []))),
        }),
        ...(mirrors.length && {
          mirrors: mirrors.map((m) => ({
            service: m.service,
            url: m.url,
            ...(m.fraction && { fraction: m.fraction }),
          })),
        }),
        // Two or more, or one with its own header edits: the proxy's weighted backends (resolve-upstreams.ts).
        ...((shares.length > 1 || weighted.some((b) => b.requestHeaders)) && {
          backends: shares.map((b) =>
            'invalid' in b
              ? b
              : {
                  service: b.service,
                  url: b.url,
                  weight: b.weight,
                  ...(b.requestHeaders && { requestHeaders: b.requestHeaders }),
                },
          ),
        }),
        listeners: group.listeners.sort(),
        ruleIndex: i,
        ...(rewrite && { rewrite }),
      });
    });
  });
  return out;
}

export interface Match {
  path: string;
  pathType: 'Exact' | 'Prefix';
  method?: string;
  headers: { name: string; value: string; type?: 'Exact' | 'RegularExpression' }[];
  query?: { name: string; value: string; type?: 'Exact' | 'RegularExpression' }[];
}

/** A rule's matches (none: every request, as PathPrefix /). */
function matchesOf(rule: HTTPRouteRule): Match[] {
  const matches = rule.matches?.length ? rule.matches : [{}];
  return matches.map((m) => ({
    path: m.path?.value ?? '/',
    pathType: m.path?.type === 'Exact' ? 'Exact' : 'Prefix',
    ...(m.method && { method: m.method }),
    headers: (m.headers ?? []).map((h) => ({
      name: h.name,
      value: h.value,
      ...(h.type && { type: h.type }),
    })),
    ...(m.queryParams?.length && {
      query: m.queryParams.map((q) => ({ name: q.name, value: q.value, ...(q.type && { type: q.type }) })),
    }),
  }));
}

function pluginsOf(rule: { filters?: HTTPRouteFilter[] }): { name: string }[] {
  return (rule.filters ?? []).flatMap((f) =>
    f.type === 'ExtensionRef' && f.extensionRef ? [{ name: f.extensionRef.name }] : [],
  );
}
