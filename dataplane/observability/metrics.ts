/**
 * Every metric, in one file, on a registry of our own. Labels are bounded: route and upstream
 * ids from the snapshot, never raw paths. Optimization: what the request path updates (request
 * counts and latencies, upstream latency, store round trips, plugin outcomes) lives in
 * hot-metrics.ts series, which do no label hashing per update; the rest is plain prom-client.
 */
import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client';
import { CountOf, type CounterSeries, HotCounter, HotHistogram } from './hot-metrics.ts';

const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
const NS_PER_S = 1e9;
const STATUS_CLASS = ['0xx', '1xx', '2xx', '3xx', '4xx', '5xx'];

export type CacheOutcome = 'hit' | 'stale' | 'miss' | 'revalidate' | 'stale_if_error' | 'bypass' | 'method';

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
export type RateLimitResult = 'allowed' | 'limited' | 'fallback' | 'unavailable';

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

/** How a soap route's request ended (sluice_soap_requests_total). */
export type SoapResult = 'ok' | 'client_fault' | 'server_fault' | 'refused' | 'bad_request' | 'error';

export class Metrics {
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
  readonly #idempotency = new HotCounter({
    name: 'sluice_idempotency_requests_total',
    help:
      'Requests with an Idempotency-Key, by route id and outcome: executed, replayed, conflict (409), mismatch (422), ' +
      'takeover (a lapsed lease), accepted (202), rejected_key (400/401), store_error (503), lease_lost.',
    labelNames: ['route', 'outcome'] as const,
    registers: [this.registry],
  });
  readonly #cache = new HotCounter({
    name: 'sluice_cache_requests_total',
    help:
      'proxy-cache outcomes by route id: hit, stale (served while revalidating), miss, revalidate, stale_if_error, ' +
      'bypass (the store did not answer: served from the upstream), method (not a cached method).',
    labelNames: ['route', 'result'] as const,
    registers: [this.registry],
  });
  readonly #rateLimit = new HotCounter({
    name: 'sluice_rate_limit_requests_total',
    help:
      'Rate-limit decisions by route id and result: allowed, limited (429), fallback (Redis down, counted ' +
      'locally), unavailable (Redis down, failMode closed: 503).',
    labelNames: ['route', 'result'] as const,
    registers: [this.registry],
  });
  readonly #transformSkipped = new HotCounter({
    name: 'sluice_transform_skipped_total',
    help:
      'Bodies a transformer passed untouched, by route id, plugin and reason: not_json, invalid_json, not_object, ' +
      'too_large, encoded (Content-Encoding); and unsafe_header: a response header value left out (CR, LF or NUL).',
    labelNames: ['route', 'plugin', 'reason'] as const,
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
  readonly #aggregateCalls = new HotHistogram({
    name: 'sluice_aggregate_call_seconds',
    help:
      'Backend calls of aggregate routes, by route id, call name and result: ok, error (a status, a non-JSON or ' +
      'too large answer, no connection) or timeout; from dispatch to the whole answer read.',
    labelNames: ['route', 'call', 'result'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [this.registry],
  });
  readonly #soap = new HotCounter({
    name: 'sluice_soap_requests_total',
    help:
      'Requests of soap routes, by route id and result: ok, client_fault (422), server_fault (502), refused (the ' +
      'answer: a DTD or entity, too large or deep, not a SOAP answer), bad_request (400, no call), error (no answer: ' +
      'time-out, open breaker, no connection).',
    labelNames: ['route', 'result'] as const,
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
  readonly #circuitIds = new Set<string>();
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
    const cls = status >= 100 && status < 600 ? STATUS_CLASS[(status / 100) | 0] : 'error';
    this.#latency.series(route, method, cls).observe(Number(process.hrtime.bigint() - startNs) / NS_PER_S);
  }

  upstreamLatency(upstream: string, startNs: bigint): void {
    this.#upstreamLatency.series(upstream).observe(Number(process.hrtime.bigint() - startNs) / NS_PER_S);
  }

  idempotency(route: string, outcome: IdempotencyOutcome): void {
    this.#idempotency.series(route, outcome).inc();
  }

  cache(route: string, result: CacheOutcome): void {
    this.#cache.series(route, result).inc();
  }

  rateLimit(route: string, result: RateLimitResult): void {
    this.#rateLimit.series(route, result).inc();
  }

  transformSkipped(route: string, plugin: string, reason: string): void {
    this.#transformSkipped.series(route, plugin, reason).inc();
  }

  circuitState(upstream: string, state: 'closed' | 'open' | 'half-open'): void {
    this.#circuitIds.add(upstream);
    this.#circuit.labels(upstream).set(state === 'closed' ? 0 : state === 'open' ? 1 : 2);
  }

  retry(upstream: string, reason: string): void {
    this.#retries.series(upstream, reason).inc();
  }

  aggregateCall(route: string, call: string, result: 'ok' | 'error' | 'timeout', startNs: bigint): void {
    this.#aggregateCalls
      .series(route, call, result)
      .observe(Number(process.hrtime.bigint() - startNs) / NS_PER_S);
  }

  soap(route: string, result: SoapResult): void {
    this.#soap.series(route, result).inc();
  }

  storeOperation(store: string, op: string, seconds: number, ok: boolean): void {
    this.#storeLatency.series(store, op, ok ? 'ok' : 'error').observe(seconds);
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

  configHash(hash: string): void {
    this.#configInfo.reset();
    this.#configInfo.labels(hash).set(1);
  }

  /** Drops the series of routes and upstreams no longer in the table (bounded memory). */
  retain(routeIds: ReadonlySet<string>, upstreamIds: ReadonlySet<string>): void {
    const route = (l: Record<string, string>) => l.route === '(none)' || routeIds.has(l.route);
    const upstream = (l: Record<string, string>) => upstreamIds.has(l.upstream);
    this.#latency.retain(route);
    this.#idempotency.retain(route);
    this.#rateLimit.retain(route);
    this.#transformSkipped.retain(route);
    this.#cache.retain(route);
    // A socket open on a route that was removed keeps counting into its detached series until it closes.
    this.#wsConnections.retain(route);
    this.#wsMessages.retain(route);
    this.#wsClosed.retain(route);
    this.#aggregateCalls.retain(route);
    this.#soap.retain(route);
    this.consumers?.retain(routeIds);
    this.#retries.retain(upstream);
    this.#upstreamLatency.retain(upstream);
    for (const id of this.#circuitIds) {
      if (upstreamIds.has(id)) continue;
      this.#circuitIds.delete(id);
      this.#circuit.remove(id);
    }
  }
}

/**
 * API analytics per consumer and route (off by default: --analytics-consumers N turns it on).
 * The consumer label is bounded: the first N consumers seen keep their own label for the life of
 * the process, every other one counts as `other`, and a request without a consumer as `(none)`,
 * so a credential-stuffing run of a million keys adds one series, not a million.
 *
 * Under --workers the pod's first N are decided by the cluster primary, not by each worker
 * (each would name its own first N, up to N per worker, and fold into `other` requests of a
 * consumer its sibling names). A worker counts a consumer it has not heard about under the
 * consumer's own label and asks the primary (`ask`, once); the primary's answer (`decided`)
 * keeps the label, or moves the counts into `other`. The primary relabels what it has not named
 * when it sums the workers' series (cluster/consumer-names.ts), and since a worker's question
 * goes out before any /metrics answer that shows the consumer, the scrape always sees the
 * decided labels. At most PENDING consumers wait for an answer; past that (a burst of new
 * consumers within one IPC round trip) a new one counts as `other` at once.
 */
/** Consumers a cluster worker may count under their own label while the primary has not answered. */
const PENDING = 1_000;

export class ConsumerAnalytics {
  readonly #latency: HotHistogram;
  readonly #bytes: HotCounter;
  readonly #idempotency: HotCounter;
  readonly #rateLimited: HotCounter;
  readonly #max: number;
  readonly #named = new Set<string>();
  /** A cluster worker's question to the primary; null: this process decides. */
  readonly #ask: ((consumer: string) => void) | null;
  /** Asked about, not answered yet. */
  readonly #pending = new Set<string>();
  /** The primary named N (all in #named): every other consumer is `other`, nothing more to ask. */
  #full = false;

  constructor(registry: Registry, maxConsumers: number, ask: ((consumer: string) => void) | null = null) {
    this.#max = maxConsumers;
    this.#ask = ask;
    this.#latency = new HotHistogram({
      name: 'sluice_consumer_request_duration_seconds',
      help:
        'Time from request to the end of the response, by route id, consumer (the first N seen, then "other"; ' +
        '"(none)" without one) and status class: its _count is requests, 4xx and 5xx are errors.',
      labelNames: ['route', 'consumer', 'status_class'] as const,
      buckets: LATENCY_BUCKETS,
      registers: [registry],
    });
    this.#bytes = new HotCounter({
      name: 'sluice_consumer_bytes_total',
      help: 'Bytes by route id, consumer and direction: in (request body), out (response: head and body on HTTP/1, body on h2).',
      labelNames: ['route', 'consumer', 'direction'] as const,
      registers: [registry],
    });
    this.#idempotency = new HotCounter({
      name: 'sluice_consumer_idempotency_requests_total',
      help: 'Requests with an Idempotency-Key by route id, consumer and outcome (as sluice_idempotency_requests_total).',
      labelNames: ['route', 'consumer', 'outcome'] as const,
      registers: [registry],
    });
    this.#rateLimited = new HotCounter({
      name: 'sluice_consumer_rate_limited_total',
      help: 'Requests refused by a rate limit (429), by route id and consumer.',
      labelNames: ['route', 'consumer'] as const,
      registers: [registry],
    });
  }

  /** The label for a consumer id: its own while fewer than N have one, else "other". */
  label(consumer: string | undefined): string {
    if (consumer === undefined) return '(none)';
    if (this.#named.has(consumer)) return consumer;
    if (this.#ask !== null) return this.#provisional(consumer);
    if (this.#named.size >= this.#max) return 'other';
    this.#named.add(consumer);
    return consumer;
  }

  /** A cluster worker: a consumer the primary has not named (yet). */
  #provisional(consumer: string): string {
    if (this.#pending.has(consumer)) return consumer;
    if (this.#full || this.#pending.size >= PENDING) return 'other';
    this.#pending.add(consumer);
    this.#ask!(consumer);
    return consumer;
  }

  /**
   * The primary's answer about a consumer asked about: named, or `other` (its counts move
   * there). `full`: the N it named, once it has (named through any worker: all keep their label
   * here too, and every other consumer is `other` without asking).
   */
  decided(consumer: string, named: boolean, full: readonly string[] | null): void {
    this.#pending.delete(consumer);
    if (full !== null) {
      this.#full = true;
      for (const c of full) this.#named.add(c);
    }
    if (named) {
      this.#named.add(consumer);
      return;
    }
    for (const m of [this.#latency, this.#bytes, this.#idempotency, this.#rateLimited])
      m.relabel('consumer', consumer, 'other');
  }

  request(
    route: string,
    consumer: string | undefined,
    status: number,
    startNs: bigint,
    bytesIn: number,
    bytesOut: number,
    idempotency: IdempotencyOutcome | null,
    rateLimited: boolean,
  ): void {
    const who = this.label(consumer);
    const cls = status >= 100 && status < 600 ? STATUS_CLASS[(status / 100) | 0] : 'error';
    this.#latency.series(route, who, cls).observe(Number(process.hrtime.bigint() - startNs) / NS_PER_S);
    if (bytesIn > 0) this.#bytes.series(route, who, 'in').value += bytesIn;
    if (bytesOut > 0) this.#bytes.series(route, who, 'out').value += bytesOut;
    if (idempotency !== null) this.#idempotency.series(route, who, idempotency).inc();
    if (rateLimited) this.#rateLimited.series(route, who).inc();
  }

  /** Drops the series of routes no longer in the table. */
  retain(routeIds: ReadonlySet<string>): void {
    const keep = (l: Record<string, string>) => routeIds.has(l.route);
    this.#latency.retain(keep);
    this.#bytes.retain(keep);
    this.#idempotency.retain(keep);
    this.#rateLimited.retain(keep);
  }
}
