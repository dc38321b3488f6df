/**
 * Pass 3: each GatewayRoute's service becomes an upstream, named by content:
 * upstream/<ns>/<service>/<hash5>, hash5 the first 5 hex of the sha256 of the canonical
 * settings (url, timeouts). Routes with the same settings share one upstream (one pool); a
 * changed setting is a new id, so the data plane never reuses a pool built for other settings.
 */
import { canonicalJson, sha256Hex } from '../../dataplane/config/canonical-json.ts';
import type { Upstream } from '../../dataplane/config/route-table.ts';
import { type Diagnostic, invalid } from '../validate/diagnostic.ts';
import type { ModelRoute } from '../validate/model.ts';
import { MAX_TIMEOUT_MS, parseDuration } from '../../dataplane/config/duration.ts';
import { type Pass, rejectObjects } from './draft.ts';

export const DEFAULT_TIMEOUTS: Upstream['timeouts'] = {
  connectMs: 5_000,
  responseMs: 60_000,
  idleMs: 60_000,
};
const HASH_LENGTH = 5;

type Settings = Omit<Upstream, 'id'>;

export const resolveUpstreams: Pass = (state) => {
  const errors: Diagnostic[] = [];
  // Optimization: keyed by the ModelRoute object (drafts of one GatewayRoute share it) rather
  // than by its refKey, and the routes already judged in a Set: the search through errors for
  // each draft was quadratic in the number of invalid routes.
  const settings = new Map<ModelRoute, Settings>();
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
    else settings.set(route, { url: route.upstreamUrl, timeouts, ...resilience });
  }
  const ids = upstreamIds(settings);
  const drafts = state.drafts.map((d) => {
    const s = settings.get(d.route);
    return s ? { ...d, upstream: { id: ids.get(d.route)!, ...s } } : d;
  });
  return rejectObjects({ ...state, drafts }, errors);
};

/** The timeouts in ms, defaults filled in, or what is wrong with them. */
function timeoutsOf(route: ModelRoute): Upstream['timeouts'] | Diagnostic[] {
  const errors: Diagnostic[] = [];
  const given = route.spec.service.timeouts ?? {};
  const out = { ...DEFAULT_TIMEOUTS };
  const fields = [
    ['connect', 'connectMs'],
    ['response', 'responseMs'],
    ['idle', 'idleMs'],
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

/** Retries and circuit breaker, defaults filled in; absent when the service sets none. */
function resilienceOf(route: ModelRoute): Pick<Upstream, 'retries' | 'breaker'> | Diagnostic[] {
  const errors: Diagnostic[] = [];
  const { retries: r, circuitBreaker: b } = route.spec.service;
  const d = (field: string, text: string | undefined, fallback: number) =>
    durationField(route, field, text, errors) ?? fallback;
  const out: Pick<Upstream, 'retries' | 'breaker'> = {};
  if (r) {
    const perTryMs = durationField(route, 'spec.service.retries.perTry', r.perTry, errors);
    out.retries = {
      attempts: r.attempts,
      statuses: [...new Set(r.statuses ?? [502, 503, 504])].sort(),
      ...(perTryMs !== undefined ? { perTryMs } : {}),
      backoffBaseMs: d('spec.service.retries.backoff.base', r.backoff?.base, 25),
      backoffMaxMs: d('spec.service.retries.backoff.max', r.backoff?.max, 250),
      budgetPercent: r.budgetPercent ?? 20,
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
  return errors.length ? errors : out;
}

/**
 * The id of each route's upstream. Five hex digits are the default; should two different
 * settings of one service share them, that service's ids grow until they differ (by content
 * only, so the result does not depend on input order).
 */
function upstreamIds(entries: ReadonlyMap<ModelRoute, Settings>): Map<ModelRoute, string> {
  const groups = new Map<string, { route: ModelRoute; hash: string }[]>();
  for (const [route, settings] of entries) {
    const group = `${route.ref.namespace}/${route.spec.service.name}`;
    const list = groups.get(group) ?? [];
    list.push({ route, hash: sha256Hex(canonicalJson(settings)) });
    groups.set(group, list);
  }
  const ids = new Map<ModelRoute, string>();
  for (const [group, list] of groups) {
    const distinct = [...new Set(list.map((e) => e.hash))];
    let length = HASH_LENGTH;
    while (distinct.length > 1 && new Set(distinct.map((h) => h.slice(0, length))).size < distinct.length)
      length++;
    for (const { route, hash } of list) ids.set(route, `upstream/${group}/${hash.slice(0, length)}`);
  }
  return ids;
}
