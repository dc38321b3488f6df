/**
 * The core's metrics, in one file, on a registry of our own; a plugin's are in its folder
 * (metric-set.ts), registered on the same registry. Labels are bounded: route and upstream ids
 * from the snapshot, never raw paths. Optimization: what the request path updates (request
 * counts and latencies, upstream latency, store round trips, plugin outcomes) lives in
 * hot-metrics.ts series, which do no label hashing per update; the rest is plain prom-client.
 */
import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client';
import { LATENCY_BUCKETS, NS_PER_S, statusClass } from './buckets.ts';
import { ConsumerAnalytics } from './consumer-analytics.ts';
import { CountOf, type CounterSeries, HotCounter, HotHistogram } from './hot-metrics.ts';
import type { MetricHost, MetricSet } from './metric-set.ts';

/** How a WebSocket upgrade ended: a 101, refused by the chain (auth, rate limit, …), past --max-websockets, the upstream's handshake failed. */
export type WebSocketResult = 'accepted' | 'refused' | 'limit' | 'upstream_error';
/** How an open WebSocket ended: a Close frame passed (normal), the idle timeout, a message over the limit, a side failed or hung up. */
export type WebSocketCloseReason =
  | 'normal'
  | 'idle'
  | 'too_big'
  | 'upstream_error'
  | 'client_error'
  | 'shutdown';

export class Metrics implements MetricHost {
  readonly registry = new Registry();
  readonly #latency = new HotHistogram({
    name: 'sluice_request_duration_seconds',
    help: 'Time from request to the end of the response, by route id, method and status class.',
    labelNames: ['route', 'method', 'status_class'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [this.registry],
  });
  /** Registered with the registry: the duration histogram's counts, read at scrape time. */
  readonly requests = new CountOf({
    name: 'sluice_requests_total',
    help: 'Requests answered, by route id, method and status class.',
    of: this.#latency,
    registers: [this.registry],
  });
  readonly #upstreamLatency = new HotHistogram({
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
  readonly adminRequests = new Counter({
    name: 'sluice_admin_requests_total',
    help:
      "Requests to the admin port, by method, route (the admin server's route pattern, or other) and status: " +
      'what the controller asks of this pod (an idle controller: one GET /config per resync interval).',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [this.registry],
  });
  readonly configLoads = new Counter({
    name: 'sluice_config_loads_total',
    help:
      'Configurations offered to the data plane, by result (applied, unchanged, rejected): pushed snapshots, and in ' +
      'standalone mode the files re-read (files that do not compile, an empty one too, count as rejected).',
    labelNames: ['result'] as const,
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
  readonly #endpoints = new Gauge({
    name: 'sluice_upstream_endpoints',
    help:
      "Endpoints of an upstream of a Service's endpoints, by upstream id and state: ready (in the snapshot: requests " +
      'go to them), draining (left it: requests under way finish before its connections close).',
    labelNames: ['upstream', 'state'] as const,
    // Each worker of a cluster runs the same snapshot and drains on its own: /metrics shows the most of any.
    aggregator: 'max',
    registers: [this.registry],
  });
  readonly #retries = new HotCounter({
    name: 'sluice_upstream_retries_total',
    help: 'Retries sent to an upstream, by upstream id and reason (status, connect, reset), and refused by the budget.',
    labelNames: ['upstream', 'reason'] as const,
    registers: [this.registry],
  });
  readonly #storeLatency = new HotHistogram({
    name: 'sluice_store_operation_seconds',
    help: 'Time of one store round trip (Redis or memory), by store, operation and result (ok, error).',
    labelNames: ['store', 'op', 'result'] as const,
    buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [this.registry],
  });
  readonly #storeEvictions = new Counter({
    name: 'sluice_store_evictions_total',
    help:
      'Live entries a memory store dropped to stay within its bound, by store: entries not yet expired, oldest ' +
      'first (the store says what that loses, e.g. a record whose key, retried, executes again). Redis stores evict nothing.',
    labelNames: ['store'] as const,
    registers: [this.registry],
  });
  readonly #wsOpen = new Gauge({
    name: 'sluice_websocket_connections',
    help: 'WebSockets open now (after their 101, until both sockets close).',
    registers: [this.registry],
  });
  readonly #wsConnections = new HotCounter({
    name: 'sluice_websocket_connections_total',
    help:
      'WebSocket upgrades by route id and result: accepted (101), refused (by the chain: auth, rate limit, …), ' +
      'limit (503: the process has --max-websockets open), upstream_error (the upstream handshake failed).',
    labelNames: ['route', 'result'] as const,
    registers: [this.registry],
  });
  readonly #wsMessages = new HotCounter({
    name: 'sluice_websocket_messages_total',
    help: 'WebSocket data messages relayed, by route id and direction (to_upstream, to_client).',
    labelNames: ['route', 'direction'] as const,
    registers: [this.registry],
  });
  readonly #wsClosed = new HotCounter({
    name: 'sluice_websocket_closed_total',
    help:
      'WebSockets ended, by route id and reason: normal (after a Close frame), idle (timeout), too_big (a message ' +
      'over the limit), upstream_error, client_error (a side hung up without a Close, or sent invalid frames), ' +
      'shutdown (1001 to both sides: the process drains).',
    labelNames: ['route', 'reason'] as const,
    registers: [this.registry],
  });
  readonly #shed = new Counter({
    name: 'sluice_requests_shed_total',
    help:
      'Requests answered 503 (SLC_ERR_OVERLOADED) without being routed, by reason: max_in_flight (the ' +
      "process's --max-in-flight), adaptive (the adaptive limit, --adaptive-concurrency).",
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });
  readonly #h2Cut = new Counter({
    name: 'sluice_http2_connections_cut_total',
    help:
      'h2 connections the gateway cut (GOAWAY ENHANCE_YOUR_CALM), by reason: rapid_reset (too many streams ' +
      'reset or left unanswered within the window, CVE-2023-44487).',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });
  readonly #listenerBound = new Gauge({
    name: 'sluice_listener_port_bound',
    help:
      "A Gateway listener port of the running snapshot, by port: 1 bound on the data plane's --host, 0 not " +
      '(the bind failed and is retried). With --workers, 1 only when every worker has it bound.',
    labelNames: ['port'] as const,
    aggregator: 'min',
    registers: [this.registry],
  });
  readonly #listenerBindFailures = new Counter({
    name: 'sluice_listener_bind_failures_total',
    help: 'Failed attempts to bind a Gateway listener port (EADDRINUSE, EACCES, …; each is retried), by port.',
    labelNames: ['port'] as const,
    registers: [this.registry],
  });
  readonly #circuitIds = new Set<string>();
  readonly #endpointIds = new Set<string>();
  /** The plugins' and handlers' route-labelled metrics (routeCounter, routeHistogram), dropped with their routes. */
  readonly #byRoute: (HotCounter | HotHistogram)[] = [];
  /** The plugins' metric sets made on this registry (of). */
  readonly #sets = new Map<MetricSet<unknown>, unknown>();
  /** Per-consumer analytics; null (the default) when off. */
  readonly consumers: ConsumerAnalytics | null;

  constructor(
    opts: {
      processMetrics?: boolean;
      analyticsConsumers?: number;
      /** A cluster worker: the primary names the consumers (ConsumerAnalytics's `ask`). */
      askConsumer?: (consumer: string) => void;
    } = {},
  ) {
    this.consumers = opts.analyticsConsumers
      ? new ConsumerAnalytics(this.registry, opts.analyticsConsumers, opts.askConsumer ?? null)
      : null;
    // Unprefixed: the standard names (process_cpu_seconds_total, nodejs_heap_size_used_bytes, …)
    // that stock Node.js dashboards query.
    if (opts.processMetrics !== false) collectDefaultMetrics({ register: this.registry });
  }

  /** Records a finished request. route is a route id, or '(none)' when nothing matched. */
  request(route: string, method: string, status: number, startNs: bigint): void {
    this.#latency
      .series(route, method, statusClass(status))
      .observe(Number(process.hrtime.bigint() - startNs) / NS_PER_S);
  }

  /**
   * A plugin's (or handler kind's) metrics on this registry: made (and registered) on the first
   * call, the same object after.
   */
  of<M>(set: MetricSet<M>): M {
    let m = this.#sets.get(set as MetricSet<unknown>) as M | undefined;
    if (m === undefined) {
      m = set.make(this);
      this.#sets.set(set as MetricSet<unknown>, m);
    }
    return m;
  }

  routeCounter(o: { name: string; help: string; labelNames: readonly ['route', ...string[]] }): HotCounter {
    const c = new HotCounter({ ...o, registers: [this.registry] });
    this.#byRoute.push(c);
    return c;
  }

  routeHistogram(o: {
    name: string;
    help: string;
    labelNames: readonly ['route', ...string[]];
    buckets?: readonly number[];
  }): HotHistogram {
    const h = new HotHistogram({ buckets: LATENCY_BUCKETS, ...o, registers: [this.registry] });
    this.#byRoute.push(h);
    return h;
  }

  upstreamLatency(upstream: string, startNs: bigint): void {
    this.#upstreamLatency.series(upstream).observe(Number(process.hrtime.bigint() - startNs) / NS_PER_S);
  }

  circuitState(upstream: string, state: 'closed' | 'open' | 'half-open'): void {
    this.#circuitIds.add(upstream);
    this.#circuit.labels(upstream).set(state === 'closed' ? 0 : state === 'open' ? 1 : 2);
  }

  /** An upstream of endpoints (per upstream, never per endpoint: pods come and go, series would pile up). */
  upstreamEndpoints(upstream: string, counts: { ready: number; draining: number }): void {
    this.#endpointIds.add(upstream);
    this.#endpoints.labels(upstream, 'ready').set(counts.ready);
    this.#endpoints.labels(upstream, 'draining').set(counts.draining);
  }

  retry(upstream: string, reason: string): void {
    this.#retries.series(upstream, reason).inc();
  }

  storeOperation(store: string, op: string, seconds: number, ok: boolean): void {
    this.#storeLatency.series(store, op, ok ? 'ok' : 'error').observe(seconds);
  }

  storeEvicted(store: string, count: number): void {
    this.#storeEvictions.inc({ store }, count);
  }

  websocketConnection(route: string, result: WebSocketResult): void {
    this.#wsConnections.series(route, result).inc();
  }

  /** An open WebSocket: counted open until websocketClosed; its message counters are looked up once, here. */
  websocketOpened(route: string): { toUpstream: CounterSeries; toClient: CounterSeries } {
    this.#wsOpen.inc();
    return {
      toUpstream: this.#wsMessages.series(route, 'to_upstream'),
      toClient: this.#wsMessages.series(route, 'to_client'),
    };
  }

  websocketClosed(route: string, reason: WebSocketCloseReason): void {
    this.#wsOpen.dec();
    this.#wsClosed.series(route, reason).inc();
  }

  requestShed(reason: 'max_in_flight' | 'adaptive'): void {
    this.#shed.labels(reason).inc();
  }

  http2SessionCut(reason: 'rapid_reset'): void {
    this.#h2Cut.labels(reason).inc();
  }

  listenerPortBound(port: number, bound: boolean): void {
    this.#listenerBound.labels(String(port)).set(bound ? 1 : 0);
  }

  listenerBindFailed(port: number): void {
    this.#listenerBindFailures.labels(String(port)).inc();
  }

  /** The port left the snapshot: its series go (ports are allocated from a range and come and go). */
  listenerPortClosed(port: number): void {
    this.#listenerBound.remove(String(port));
    this.#listenerBindFailures.remove(String(port));
  }

  configHash(hash: string): void {
    this.#configInfo.reset();
    this.#configInfo.labels(hash).set(1);
  }

  /** Drops the series of routes and upstreams no longer in the table (bounded memory). */
  retain(routeIds: ReadonlySet<string>, upstreamIds: ReadonlySet<string>): void {
    const route = (l: Record<string, string>) => l.route === '(none)' || routeIds.has(l.route);
    const upstream = (l: Record<string, string>) => upstreamIds.has(l.upstream);
    this.#latency.retain(route);
    for (const m of this.#byRoute) m.retain(route);
    // A socket open on a route that was removed keeps counting into its detached series until it closes.
    this.#wsConnections.retain(route);
    this.#wsMessages.retain(route);
    this.#wsClosed.retain(route);
    this.consumers?.retain(routeIds);
    this.#retries.retain(upstream);
    this.#upstreamLatency.retain(upstream);
    for (const id of this.#circuitIds) {
      if (upstreamIds.has(id)) continue;
      this.#circuitIds.delete(id);
      this.#circuit.remove(id);
    }
    for (const id of this.#endpointIds) {
      if (upstreamIds.has(id)) continue;
      this.#endpointIds.delete(id);
      this.#endpoints.remove(id, 'ready');
      this.#endpoints.remove(id, 'draining');
    }
  }
}
