/** The runtime form of a route: everything the request path reads, compiled once per snapshot. */
import type { Logger } from 'pino';
import type { Route } from '../config/route-table.ts';
import type { Metrics } from '../observability/metrics.ts';
import type { RequestContext, RequestHook, ResponseHook } from '../pipeline/context.ts';
import type { IdempotencyStore } from '../stores/idempotency-store.ts';
import type { RateLimitStore } from '../stores/rate-limit-store.ts';
import type { UpstreamRuntime } from '../upstream/pools.ts';
import type { Background } from './background.ts';

export interface Limits {
  maxBodyBytes: number;
  /** How many data-plane replicas share a Redis limit: a fail-open fallback counts limit ÷ this locally. */
  replicasHint: number;
}

export interface RuntimeDeps {
  log: Logger;
  metrics: Metrics;
  limits: Limits;
  /** Write one log line per request. */
  accessLog: boolean;
  /** Shared state: Redis in a cluster, memory in standalone mode. */
  stores: { idempotency: IdempotencyStore; rateLimit: RateLimitStore; rateLimitLocal: RateLimitStore };
  background: Background;
}

export interface RuntimeRoute {
  id: string;
  entry: Route;
  /** null = any method / host / headers. */
  methods: ReadonlySet<string> | null;
  hosts: ((host: string) => boolean) | null;
  headers: ReadonlyArray<readonly [name: string, value: string]> | null;
  /** Length of the prefix to strip from the path before forwarding, or 0. */
  stripLength: number;
  requestHooks: RequestHook[] | null;
  responseHooks: ResponseHook[] | null;
  /** The upstream phase: forwards the request and writes the response. */
  handler: (ctx: RequestContext) => void;
  upstream: UpstreamRuntime;
  deps: RuntimeDeps;
}
