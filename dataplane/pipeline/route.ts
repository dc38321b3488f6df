/** The runtime form of a route: everything the request path reads, compiled once per snapshot. */
import type { Abortable } from '../upstream/abortable.ts';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import type { Route } from '../config/route-table.ts';
import type { Metrics } from '../observability/metrics.ts';
import type { Tracing } from '../observability/tracing.ts';
import type { StoreLookup } from '../stores/store-kind.ts';
import type { ResponseSink } from '../upstream/call.ts';
import type { PathRewrite } from '../upstream/path.ts';
import type { Background } from './background.ts';
import type { RequestContext, RequestHook, ResponseHook } from './context.ts';

export interface Limits {
  maxBodyBytes: number;
  /**
   * How many data-plane replicas share a Redis limit: a fail-open fallback counts limit ÷ this
   * locally, and with syncMs each replica admits its share of the room left between syncs.
   */
  replicasHint: number;
  /** Open WebSockets (data-plane-wide); absent: neither an idle timeout nor a message-size limit. */
  websocket?: WebSocketLimits;
}

export interface WebSocketLimits {
  /** No frame either way for this long: Close 1001 to both sides. 0: none. */
  idleTimeoutMs: number;
  /** The largest message, the sum of its frames' payloads: past it Close 1009 to both sides. 0: none. */
  maxMessageBytes: number;
}

export interface RuntimeDeps {
  log: Logger;
  metrics: Metrics;
  limits: Limits;
  /** Write one log line per request. */
  accessLog: boolean;
  /** The share of answered (< 400) requests logged, 0 to 1 (default 1); errors and refusals are always logged. */
  accessLogSample?: number;
  /** Route-id prefixes whose requests are not logged (`route/<ns>/<name>/` silences a GatewayRoute), except failures. */
  accessLogOff?: readonly string[];
  /** The OpenTelemetry SDK when OTEL_* configures it; null: no span is ever made. */
  tracing?: Tracing | null;
  /** Shared state: Redis in a cluster, memory in standalone mode; each store of a kind a plugin declared. */
  stores: StoreLookup;
  background: Background;
  /** The HTTPS port clients reach, for routes' httpsRedirect (default 443). */
  httpsRedirectPort?: number;
}

/** A route's terminal step (a handler kind bound to the route): the last thing its chain runs. */
export interface BoundHandler {
  /** Answers the request: calls the upstream(s) and writes the response to the client. */
  handle(ctx: RequestContext): void;
  /**
   * The same upstream call(s), with the response delivered to `sink` instead of the client:
   * asynchronous operations run the route's work this way (idempotency, §4.3). `signal`: when
   * the answer still goes to the client, its signal (the call is cut when the client goes away).
   */
  call(ctx: RequestContext, sink: ResponseSink, signal?: Abortable): void;
  /** Present when the kind can carry an HTTP/1.1 upgrade (WebSocket): takes over ctx.upgrade's socket. */
  upgrade?(ctx: RequestContext, socket: Duplex, head: Buffer): void;
}

export interface RuntimeRoute {
  id: string;
  entry: Route;
  /** null = any method / host / headers. */
  methods: ReadonlySet<string> | null;
  hosts: ((host: string) => boolean) | null;
  /** The header matches (router.ts headerMatches): an exact value, or an anchored pattern. */
  headers: ReadonlyArray<readonly [name: string, value: string | RegExp]> | null;
  /** The cookie matches (name, exact value), or null: the Cookie header is then never read. */
  cookies: ReadonlyArray<readonly [name: string, value: string]> | null;
  /** The query matches (router.ts queryMatcher), or null: the query is then never parsed. */
  query: ((params: URLSearchParams) => boolean) | null;
  /** The path the upstream gets in place of the request's (stripPrefix, rewrite.path: upstream/path.ts), or null. */
  rewritePath: PathRewrite | null;
  /** In phase order; null when the route has none (the common case costs no loop). */
  requestHooks: RequestHook[] | null;
  responseHooks: ResponseHook[] | null;
  /**
   * Where the request body is read whole (once, with the body limit): the index of the first
   * request hook that needs it, requestHooks.length when only the handler does, -1 when
   * nothing does (the body then streams to the upstream).
   */
  bodyAt: number;
  /** The largest request body: the data plane's limit, or lower where a plugin of the route says so. */
  maxBodyBytes: number;
  handler: BoundHandler;
  /**
   * A plugin of the cors-preflight phase is on the route: a browser's preflight (OPTIONS asking
   * about another method) may match the route by the method it asks about (server/handle.ts).
   */
  answersPreflight: boolean;
  /**
   * The names of the route's steps (its plugins and the built-in steps its entry asks for, e.g.
   * https-redirect, deprecation) in phase order, then the handler kind (golden match tests, debugging).
   */
  chain: readonly string[];
  /** The share of this route's answered (< 400) requests that get an access-log line, 0 to 1; null: the route logs only failures. */
  logRate: number | null;
  deps: RuntimeDeps;
}
