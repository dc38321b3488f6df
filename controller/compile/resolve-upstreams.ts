/**
 * Pass 4: each GatewayRoute's service (or each backend of its versions, or each service a
 * route's handler kind calls, e.g. an aggregate's calls) becomes an upstream, named by content:
 * upstream/<ns>/<service>/<hash5>, hash5 the first 5 hex of the sha256 of the canonical
 * settings (url, timeouts, balance, outlier detection). Routes with the same settings share one
 * upstream (one pool); a changed setting is a new id, so the data plane never reuses a pool built
 * for other settings. A backendRef's balance and the service's outlier detection go into the
 * table only when the upstream has endpoints (the data plane refuses them otherwise: a Service
 * without EndpointSlices is dialled by its DNS name).
 */
import { canonicalJson, keySorter, sha256Hex } from '../../dataplane/config/canonical-json.ts';
import { handlerManifest } from '../../dataplane/config/catalog.ts';
import type { Balance, Route, Upstream } from '../../dataplane/config/route-table.ts';
import { type Diagnostic, invalid } from '../validate/diagnostic.ts';
import type { ModelRoute } from '../validate/model.ts';
import { MAX_TIMEOUT_MS, parseDuration } from '../../dataplane/config/duration.ts';
import { type Draft, type Pass, rejectObjects } from './draft.ts';

export const DEFAULT_TIMEOUTS: Upstream['timeouts'] = {
  connectMs: 5_000,
  responseMs: 60_000,
  idleMs: 60_000,
};
const HASH_LENGTH = 5;

type Settings = Omit<Upstream, 'id'>;
/** What every upstream of a GatewayRoute shares: all but the url. */
type Common = Omit<Settings, 'url'>;

export const resolveUpstreams: Pass = (state) => {
  const errors: Diagnostic[] = [];
  // Optimization: keyed by the ModelRoute object (drafts of one GatewayRoute share it) rather
  // than by its refKey, and the routes already judged in a Set: the search through errors for
  // each draft was quadratic in the number of invalid routes.
  const common = new Map<ModelRoute, Common>();
  const seen = new Set<ModelRoute>();
  for (const { route } of state.drafts) {
    if (seen.has(route)) continue;
    seen.add(route);
    const timeouts = timeoutsOf(route);
    const resilience = resilienceOf(route);
    if (Array.isArray(timeouts) || Array.isArray(resilience))
      errors.push(
        ...(Array.isArray(timeouts) ? timeouts : []),
        ...(Array.isArray(resilience) ? resilience : []),
      );
    else common.set(route, { timeouts, ...resilience });
  }
  // Upstreams go into the table as they are: keys in sorted order (see tableOf in index.ts), the
  // order of each key list worked out once per pass.
  const sorted = keySorter();
  // Each (route, url, deadline, balance) worked out once: drafts of one GatewayRoute mostly share
  // their backend. Optimization: its settings, hash and (below) Upstream object too, shared by
  // those drafts (nothing after this pass changes an upstream): 5,000 GatewayRoutes of two
  // paths each allocated ~34 MB in this pass per build, half of it the same settings and
  // upstreams made again for the second path.
  const known = new Map<ModelRoute, Map<string, Resolved>>();
  const resolvedFor = (route: ModelRoute, w: Wish, c: Common): Resolved => {
    let byWish = known.get(route);
    if (byWish === undefined) {
      byWish = new Map();
      known.set(route, byWish);
    }
    const group = groupOf(route, w);
    const key = `${group}\n${w.url}\n${w.requestMs ?? ''}\n${w.balance ? JSON.stringify(w.balance) : ''}`;
    let r = byWish.get(key);
    if (r === undefined) {
      // An upstream reached through a Service's endpoints never shares an id with one dialled
      // by its url (the same DNS name written as service.url): the data plane keeps one runtime
      // per id. Url-only upstreams hash as they always did.
      const settings = sorted(settingsOf(route, w, c));
      const hash = sha256Hex(
        canonicalJson(route.endpoints?.has(w.url) ? { ...settings, viaEndpoints: true } : settings),
      );
      r = { group, hash, settings, upstream: null };
      byWish.set(key, r);
    }
    return r;
  };
  const ids = new UpstreamIds(sorted);
  const wishes = state.drafts.map((d) => (common.has(d.route) ? wishesOf(d) : []));
  state.drafts.forEach((d, i) => {
    const c = common.get(d.route);
    if (c)
      for (const w of wishes[i]) {
        const r = resolvedFor(d.route, w, c);
        ids.add(r.group, r.hash);
      }
  });
  const drafts = state.drafts.map((d, i) => {
    const c = common.get(d.route);
    if (!c) return d;
    const upstreams = wishes[i].map((w) => {
      const r = resolvedFor(d.route, w, c);
      r.upstream ??= ids.upstream(r.group, d.route, r.hash, r.settings);
      return r.upstream;
    });
    const h = d.route.handlers[d.ruleIndex];
    if (h?.entry) return { ...d, handler: { entry: h.entry, upstreams: [] } };
    // Error pages (an Ingress's custom-http-errors) come very last: taken off before the rest.
    const pages = d.route.errorPages && {
      headers: { ...d.route.errorPages.headers },
      statuses: [...d.route.errorPages.statuses],
      upstream: upstreams.pop()!,
    };
    const errorPages = pages && { errorPages: { ...pages, upstream: pages.upstream.id } };
    const withPages = pages ? [...upstreams, pages.upstream] : upstreams;
    if (h) {
      const entry = handlerManifest(h.kind)!.route!.entry(
        h.config,
        upstreams.map((u) => u.id),
      ) as Route['handler'];
      return { ...d, handler: { entry, upstreams } };
    }
    // Mirrors (an HTTPRoute rule's) are the last upstreams; their copies go beside the main call.
    const mirrored = d.route.mirrors?.map((m, i) => ({
      ...(m.fraction && { fraction: m.fraction }),
      upstream: upstreams[upstreams.length - d.route.mirrors!.length + i].id,
    }));
    if (d.route.backends) {
      // Upstreams are the valid backends', in order; an invalid one's share answers 500.
      let next = 0;
      const backends = d.route.backends.map((b) =>
        'invalid' in b
          ? { problem: 'SLC_ERR_BACKEND_INVALID' as const, weight: b.weight }
          : {
              ...(b.requestHeaders && { requestHeaders: b.requestHeaders }),
              upstream: upstreams[next++].id,
              weight: b.weight,
            },
      );
      const entry = {
        backends,
        ...errorPages,
        ...(mirrored && { mirrors: mirrored }),
        type: 'proxy' as const,
      };
      return { ...d, handler: { entry, upstreams: withPages } };
    }
    if (mirrored) {
      const entry = { ...errorPages, mirrors: mirrored, type: 'proxy' as const, upstream: upstreams[0].id };
      return { ...d, handler: { entry, upstreams: withPages } };
    }
    const [first, second] = upstreams;
    const canary = second && { upstream: second, weight: d.version!.backends[1].weight };
    return { ...d, upstream: first, ...(canary && { canary }), ...(pages && { errorPages: pages }) };
  });
  return rejectObjects({ ...state, drafts }, errors);
};

/** A wish of a route worked out: its upstream's group, settings, content hash, and the Upstream once made. */
interface Resolved {
  group: string;
  hash: string;
  settings: Settings;
  upstream: Upstream | null;
}

/**
 * An upstream a draft calls: its url, a deadline of its own (a handler's call timeout), and the
 * balance over its endpoints (a backendRef's: spec.service's, a version's or a canary backend's).
 */
interface Wish {
  url: string;
  /** The Service it names, when not spec.service (an HTTPRoute rule's other weighted backends): in its id. */
  service?: string;
  requestMs?: number;
  balance?: Balance;
}

/**
 * A draft's upstreams: those of the handler kind its rule chooses (an aggregate's calls, a soap
 * route's service), else its version's backends (one, or a canary's two), else the service's url.
 */
function wishesOf(d: Draft): Wish[] {
  const h = d.route.handlers[d.ruleIndex];
  if (h?.entry) return [];
  // An HTTPRoute rule's mirrors come after the main ones (the draft's handler entry takes them from the end).
  const mirrors = d.route.mirrors;
  const pages = d.route.errorPages;
  return [
    ...mainWishes(d),
    ...(mirrors ?? []).map((m) => ({ url: m.url, service: m.service })),
    // The error pages' upstream comes very last (the draft takes it off first).
    ...(pages ? [{ url: pages.url, service: pages.service }] : []),
  ];
}

function mainWishes(d: Draft): Wish[] {
  const h = d.route.handlers[d.ruleIndex];
  if (d.route.backends)
    return d.route.backends.flatMap((b) => ('invalid' in b ? [] : [{ url: b.url, service: b.service }]));
  if (h) return handlerManifest(h.kind)!.route!.upstreams(h.config, h.urls, d.route.upstreamUrl);
  return (d.version?.backends ?? [{ url: d.route.upstreamUrl, balance: d.route.balance }]).map((b) => ({
    url: b.url,
    ...(b.balance && { balance: b.balance }),
  }));
}

/**
 * The service's settings for one url; a wish's own deadline lowers the request deadline; its
 * balance and the service's outlier detection are kept when the url has endpoints.
 */
function settingsOf(route: ModelRoute, w: Wish, common: Common): Settings {
  const { outlierDetection, ...c } = common;
  const via = route.endpoints?.has(w.url) === true;
  const protocol = route.protocols?.get(w.url);
  const endpointSettings = {
    ...(via && w.balance && { balance: w.balance }),
    ...(via && outlierDetection && { outlierDetection }),
    ...(protocol && { protocol }),
  };
  if (w.requestMs === undefined) return { url: w.url, ...c, ...endpointSettings };
  const requestMs = Math.min(w.requestMs, c.timeouts.requestMs ?? w.requestMs);
  return { url: w.url, ...c, ...endpointSettings, timeouts: { ...c.timeouts, requestMs } };
}

/** The timeouts in ms, defaults filled in, or what is wrong with them. */
function timeoutsOf(route: ModelRoute): Upstream['timeouts'] | Diagnostic[] {
  const errors: Diagnostic[] = [];
  const given = route.spec.service.timeouts ?? {};
  const out = { ...DEFAULT_TIMEOUTS };
  const fields = [
    ['connect', 'connectMs'],
    ['response', 'responseMs'],
    ['idle', 'idleMs'],
    ['send', 'sendMs'],
    ['request', 'requestMs'],
  ] as const;
  for (const [field, key] of fields) {
    const ms = durationField(route, `spec.service.timeouts.${field}`, given[field], errors);
    if (ms !== undefined) out[key] = ms;
  }
  return errors.length ? errors : out;
}

/** A duration field in ms (undefined when absent or invalid; invalid adds a diagnostic). */
function durationField(route: ModelRoute, field: string, text: string | undefined, errors: Diagnostic[]) {
  if (text === undefined) return undefined;
  const ms = parseDuration(text);
  if (ms === undefined || ms < 1 || ms > MAX_TIMEOUT_MS) {
    const why =
      ms === undefined ? 'is not a duration such as "5s" or "1m30s"' : 'must be between 1ms and 596h';
    errors.push(invalid(route.ref, field, `${JSON.stringify(text)} ${why}`));
    return undefined;
  }
  return ms;
}

/** Retries, circuit breaker and outlier detection, defaults filled in; absent when the service sets none. */
function resilienceOf(
  route: ModelRoute,
): Pick<Upstream, 'retries' | 'breaker' | 'outlierDetection'> | Diagnostic[] {
  const errors: Diagnostic[] = [];
  const { retries: r, circuitBreaker: b, outlierDetection: o } = route.spec.service;
  const d = (field: string, text: string | undefined, fallback: number) =>
    durationField(route, field, text, errors) ?? fallback;
  const out: Pick<Upstream, 'retries' | 'breaker' | 'outlierDetection'> = {};
  if (r) {
    const perTryMs = durationField(route, 'spec.service.retries.perTry', r.perTry, errors);
    out.retries = {
      attempts: r.attempts,
      statuses: [...new Set(r.statuses ?? [502, 503, 504])].sort(),
      ...(perTryMs !== undefined ? { perTryMs } : {}),
      backoffBaseMs: d('spec.service.retries.backoff.base', r.backoff?.base, 25),
      backoffMaxMs: d('spec.service.retries.backoff.max', r.backoff?.max, 250),
      budgetPercent: r.budgetPercent ?? 20,
      minRetriesPerSecond: r.minRetriesPerSecond ?? 10,
      idempotentBackend: r.idempotentBackend ?? false,
    };
  }
  if (b)
    out.breaker = {
      errorPercent: b.errorPercent ?? 50,
      minRequests: b.minRequests ?? 20,
      windowMs: d('spec.service.circuitBreaker.window', b.window, 10_000),
      openMs: d('spec.service.circuitBreaker.openFor', b.openFor, 5_000),
      halfOpenRequests: b.halfOpenRequests ?? 3,
    };
  if (o) {
    const at = 'spec.service.outlierDetection';
    const baseEjectionMs = d(`${at}.baseEjectionTime`, o.baseEjectionTime, 30_000);
    const maxEjectionMs = d(`${at}.maxEjectionTime`, o.maxEjectionTime, 300_000);
    if (maxEjectionMs < baseEjectionMs)
      errors.push(
        invalid(
          route.ref,
          `${at}.maxEjectionTime`,
          `must be at least baseEjectionTime (${maxEjectionMs} ms < ${baseEjectionMs} ms)`,
        ),
      );
    out.outlierDetection = {
      consecutiveFailures: o.consecutiveFailures ?? 5,
      baseEjectionMs,
      maxEjectionMs,
      maxEjectionPercent: o.maxEjectionPercent ?? 50,
    };
  }
  return errors.length ? errors : out;
}

/**
 * The id of each upstream: upstream/<ns>/<service>/<hash>. Five hex digits are the default;
 * should two different settings of one service share them, that service's ids grow until they
 * differ (by content only, so the result does not depend on input order).
 */
class UpstreamIds {
  readonly #sorted: <T>(value: T) => T;
  readonly #hashes = new Map<string, Set<string>>(); // by group
  #lengths: Map<string, number> | null = null;

  constructor(sorted: <T>(value: T) => T) {
    this.#sorted = sorted;
  }

  add(group: string, hash: string): void {
    const set = this.#hashes.get(group) ?? new Set();
    set.add(hash);
    this.#hashes.set(group, set);
  }

  /** After every add. */
  upstream(group: string, route: ModelRoute, hash: string, settings: Settings): Upstream {
    this.#lengths ??= new Map(
      [...this.#hashes].map(([group, set]) => {
        const distinct = [...set];
        let length = HASH_LENGTH;
        while (distinct.length > 1 && new Set(distinct.map((h) => h.slice(0, length))).size < distinct.length)
          length++;
        return [group, length];
      }),
    );
    // A Service's endpoints are not part of the id (nor of the hash it is made from): pods come
    // and go, and the data plane keeps an upstream's pools, breaker and budget per id.
    const endpoints = route.endpoints?.get(settings.url);
    return this.#sorted({
      id: `upstream/${group}/${hash.slice(0, this.#lengths.get(group))}`,
      ...settings,
      ...(endpoints && { endpoints: [...endpoints] }),
    });
  }
}

/** The <ns>/<service> of upstream/<ns>/<service>/<hash>. */
const groupOf = (route: ModelRoute, w: Wish) =>
  `${route.ref.namespace}/${w.service ?? route.spec.service.name}`;
