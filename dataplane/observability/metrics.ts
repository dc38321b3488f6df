/**
 * Every prom-client metric, in one file, on a registry of our own. Labels are bounded: route
 * and upstream ids from the snapshot, never raw paths. Optimization: label children are cached
 * per (route, method, status class) so a request does no label hashing.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
const NS_PER_S = 1e9;

const IDEMPOTENCY_OUTCOMES = [
  'executed',
  'replayed',
  'conflict',
  'mismatch',
  'takeover',
  'accepted',
  'rejected_key',
  'store_error',
  'lease_lost',
] as const;
export type IdempotencyOutcome = (typeof IDEMPOTENCY_OUTCOMES)[number];

export class Metrics {
  readonly registry = new Registry();
  readonly #requests = new Counter({
    name: 'sluice_requests_total',
    help: 'Requests answered, by route id, method and status class.',
    labelNames: ['route', 'method', 'status_class'] as const,
    registers: [this.registry],
  });
  readonly #latency = new Histogram({
    name: 'sluice_request_duration_seconds',
    help: 'Time from request to the end of the response, by route id, method and status class.',
    labelNames: ['route', 'method', 'status_class'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [this.registry],
  });
  readonly #upstreamLatency = new Histogram({
    name: 'sluice_upstream_response_seconds',
    help: "Time from dispatch to the upstream's response headers, by upstream id.",
    labelNames: ['upstream'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [this.registry],
  });
  readonly #configInfo = new Gauge({
    name: 'sluice_config_info',
    help: 'The snapshot the data plane runs (value 1), by hash.',
    labelNames: ['hash'] as const,
    registers: [this.registry],
  });
  readonly configLoads = new Counter({
    name: 'sluice_config_loads_total',
    help: 'Snapshots offered to the data plane, by result (applied, unchanged, rejected).',
    labelNames: ['result'] as const,
    registers: [this.registry],
  });
  readonly #idempotency = new Counter({
    name: 'sluice_idempotency_requests_total',
    help:
      'Requests with an Idempotency-Key, by route id and outcome: executed, replayed, conflict (409), mismatch (422), ' +
      'takeover (a lapsed lease), accepted (202), rejected_key (400/401), store_error (503), lease_lost.',
    labelNames: ['route', 'outcome'] as const,
    registers: [this.registry],
  });
  readonly #rateLimit = new Counter({
    name: 'sluice_rate_limit_requests_total',
    help:
      'Rate-limit decisions by route id and result: allowed, limited (429), fallback (Redis down, counted ' +
      'locally), unavailable (Redis down, failMode closed: 503).',
    labelNames: ['route', 'result'] as const,
    registers: [this.registry],
  });
  readonly #circuit = new Gauge({
    name: 'sluice_upstream_circuit_state',
    help: 'Circuit breaker state by upstream id: 0 closed, 1 open, 2 half-open.',
    labelNames: ['upstream'] as const,
    // Each worker of a cluster has its own breakers: /metrics shows the highest state of any.
    aggregator: 'max',
    registers: [this.registry],
  });
  readonly #retries = new Counter({
    name: 'sluice_upstream_retries_total',
    help: 'Retries sent to an upstream, by upstream id and reason (status, connect, reset), and refused by the budget.',
    labelNames: ['upstream', 'reason'] as const,
    registers: [this.registry],
  });
  readonly #storeLatency = new Histogram({
    name: 'sluice_store_operation_seconds',
    help: 'Time of one store round trip (Redis or memory), by store, operation and result (ok, error).',
    labelNames: ['store', 'op', 'result'] as const,
    buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [this.registry],
  });
  readonly #children = new Map<string, [{ inc(): void }, { observe(v: number): void }]>();
  readonly #upstreamChildren = new Map<string, { observe(v: number): void }>();

  constructor(opts: { processMetrics?: boolean } = {}) {
    // Unprefixed: the standard names (process_cpu_seconds_total, nodejs_heap_size_used_bytes, …)
    // that stock Node.js dashboards query.
    if (opts.processMetrics !== false) collectDefaultMetrics({ register: this.registry });
  }

  /** Records a finished request. route is a route id, or '(none)' when nothing matched. */
  request(route: string, method: string, status: number, startNs: bigint): void {
    const cls = status >= 100 && status < 600 ? `${(status / 100) | 0}xx` : 'error';
    const key = `${route}\u0000${method}\u0000${cls}`;
    let c = this.#children.get(key);
    if (c === undefined) {
      c = [this.#requests.labels(route, method, cls), this.#latency.labels(route, method, cls)] as const;
      this.#children.set(key, c);
    }
    c[0].inc();
    c[1].observe(Number(process.hrtime.bigint() - startNs) / NS_PER_S);
  }

  upstreamLatency(upstream: string, startNs: bigint): void {
    let c = this.#upstreamChildren.get(upstream);
    if (c === undefined) {
      c = this.#upstreamLatency.labels(upstream);
      this.#upstreamChildren.set(upstream, c);
    }
    c.observe(Number(process.hrtime.bigint() - startNs) / NS_PER_S);
  }

  /**
   * Label children of the per-route and per-upstream counters, cached like #children: a request
   * does no label hashing. Each knows its owner (route or upstream id) for retain().
   */
  readonly #counted = new Map<
    string,
    { child: { inc(): void }; drop(): void; owner: string; byRoute: boolean }
  >();
  readonly #circuitIds = new Set<string>();

  #inc(tag: string, counter: Counter<string>, owner: string, value: string, byRoute: boolean): void {
    const key = `${tag}\u0000${owner}\u0000${value}`;
    let c = this.#counted.get(key);
    if (c === undefined) {
      c = { child: counter.labels(owner, value), drop: () => counter.remove(owner, value), owner, byRoute };
      this.#counted.set(key, c);
    }
    c.child.inc();
  }

  idempotency(route: string, outcome: IdempotencyOutcome): void {
    this.#inc('idempotency', this.#idempotency, route, outcome, true);
  }

  rateLimit(route: string, result: 'allowed' | 'limited' | 'fallback' | 'unavailable'): void {
    this.#inc('rate', this.#rateLimit, route, result, true);
  }

  circuitState(upstream: string, state: 'closed' | 'open' | 'half-open'): void {
    this.#circuitIds.add(upstream);
    this.#circuit.labels(upstream).set(state === 'closed' ? 0 : state === 'open' ? 1 : 2);
  }

  retry(upstream: string, reason: string): void {
    this.#inc('retry', this.#retries, upstream, reason, false);
  }

  storeOperation(store: string, op: string, seconds: number, ok: boolean): void {
    this.#storeLatency.labels(store, op, ok ? 'ok' : 'error').observe(seconds);
  }

  configHash(hash: string): void {
    this.#configInfo.reset();
    this.#configInfo.labels(hash).set(1);
  }

  /** Drops label children of routes and upstreams no longer in the table (bounded memory). */
  retain(routeIds: ReadonlySet<string>, upstreamIds: ReadonlySet<string>): void {
    for (const key of this.#children.keys()) {
      const [route, method, cls] = key.split('\u0000');
      if (route === '(none)' || routeIds.has(route)) continue;
      this.#children.delete(key);
      this.#requests.remove(route, method, cls);
      this.#latency.remove(route, method, cls);
    }
    for (const [key, c] of this.#counted) {
      if (c.byRoute ? routeIds.has(c.owner) : upstreamIds.has(c.owner)) continue;
      this.#counted.delete(key);
      c.drop();
    }
    for (const id of this.#circuitIds) {
      if (upstreamIds.has(id)) continue;
      this.#circuitIds.delete(id);
      this.#circuit.remove(id);
    }
    for (const id of this.#upstreamChildren.keys()) {
      if (upstreamIds.has(id)) continue;
      this.#upstreamChildren.delete(id);
      this.#upstreamLatency.remove(id);
    }
  }
}
