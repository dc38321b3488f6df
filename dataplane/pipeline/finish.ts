/**
 * The end of every request the gateway answers or forwards: one metric sample and one access-log
 * line, whatever path it took (refused at ingress, answered by a plugin, failed, proxied).
 * The line's fields are in observability/access-log.ts's terms; docs/observability.md, "Access logs", lists them.
 */
import type { IncomingMessage } from 'node:http';
import type { Logger } from 'pino';
import { msBetween, redactQuery, safeTarget } from '../observability/access-log.ts';
import type { Metrics } from '../observability/metrics.ts';
import { endServerSpan, type Span, type Tracing } from '../observability/tracing.ts';
import type { RequestContext } from './context.ts';
import { loggedSlots } from './slot.ts';

/** What the server records with before any route is known. */
export interface Observers {
  metrics: Metrics;
  log: Logger;
  accessLog: boolean;
  /** The OpenTelemetry SDK when OTEL_* configures it; null or absent: no span. */
  tracing?: Tracing | null;
}

/**
 * `err`: an unexpected failure (a plugin threw): the line is written at error level with it,
 * and written even when access logging is off, so the failure is never silent.
 */
export function finishRequest(ctx: RequestContext, errorCode: string | null, err?: unknown): void {
  if (ctx.finished) return;
  ctx.finished = true;
  const route = ctx.route;
  const deps = route.deps;
  const status = ctx.res.statusCode;
  deps.metrics.request(route.id, ctx.method, status, ctx.startNs);
  if (ctx.span !== null) endServerSpan(ctx.span, status, errorCode);
  const consumers = deps.metrics.consumers;
  if (consumers !== null)
    consumers.request(route.id, ctx.consumer?.id, status, ctx.startNs, bytesIn(ctx) ?? 0, bytesOut(ctx) ?? 0);
  // Optimization: the route's rate is compiled once per snapshot (null: off); errors are never sampled out.
  const rate = route.logRate;
  if (err === undefined && (rate === null || (rate < 1 && status < 400 && Math.random() >= rate))) return;
  const line = accessLine(ctx, status, errorCode);
  if (err === undefined) deps.log.info(line, 'request');
  else deps.log.error({ ...line, err }, 'request failed');
}

function accessLine(ctx: RequestContext, status: number, errorCode: string | null) {
  const now = process.hrtime.bigint();
  const req = ctx.req;
  const line: Record<string, unknown> = {
    requestId: ctx.requestId,
    traceId: ctx.traceId ?? undefined,
    client: ctx.clientAddress,
    method: ctx.method,
    host: req.headers.host ?? req.headers[':authority'],
    path: ctx.path,
    query: redactQuery(ctx.query),
    route: ctx.route.id,
    consumer: ctx.consumer?.id,
    status,
    upstreamStatus: ctx.status || undefined,
    upstream: ctx.upstreamAddress ?? undefined,
    bytesIn: bytesIn(ctx),
    bytesOut: bytesOut(ctx),
    durationMs: msBetween(ctx.startNs, now),
    upstreamMs:
      ctx.upstreamHeadersNs === 0n ? undefined : msBetween(ctx.upstreamStartNs, ctx.upstreamHeadersNs),
  };
  // What the plugins decided (their logged slots: idempotency outcome, rate-limit result, …), then the error.
  if (ctx.slots !== null) for (const s of loggedSlots()) line[s.log!] = s.get(ctx);
  line.error = errorCode ?? undefined;
  return line;
}

/** The request body's size: read, declared, or unknown (a chunked body streamed through). */
function bytesIn(ctx: RequestContext): number | undefined {
  if (ctx.body !== null) return ctx.body.length;
  const length = ctx.headers['content-length'];
  if (length !== undefined) return Number(length);
  return ctx.hasBody ? undefined : 0;
}

/**
 * Bytes the connection has written (status lines, headers and bodies); on HTTP/1 the difference
 * across a request is its response's size.
 */
export function bytesWritten(req: IncomingMessage): number {
  return req.socket?.bytesWritten ?? 0;
}

/** The body bytes an h2 response wrote (server/h2-response.ts): its session's socket is shared. */
export const H2_BYTES_OUT = Symbol('sluice.h2BytesOut');

/** The response's size: head and body on HTTP/1, the body on h2 (its header block is HPACK-compressed per connection). */
function bytesOut(ctx: RequestContext): number | undefined {
  if (ctx.req.httpVersionMajor === 1) return bytesWritten(ctx.req) - ctx.bytesOutAtStart;
  return (ctx.res as unknown as { [H2_BYTES_OUT]?: number })[H2_BYTES_OUT];
}

/** A request refused before it had a route (bad target, headers, method, no config yet, no route). */
export function finishRefused(
  obs: Observers,
  req: IncomingMessage | null,
  status: number,
  errorCode: string,
  requestId: string | undefined,
  startNs: bigint,
  /** The peer's address (forwarded headers are not read for a refused request: the peer is the client we know). */
  client: string | undefined,
  /** Its server span (tracing on), ended here. */
  span: Span | null = null,
): void {
  obs.metrics.request('(none)', req?.method ?? '', status, startNs);
  if (span !== null) endServerSpan(span, status, errorCode);
  if (!obs.accessLog) return;
  obs.log.info(
    {
      requestId,
      traceId: span === null ? undefined : span.spanContext().traceId,
      client,
      method: req?.method,
      host: req?.headers.host,
      // The raw target, without its query: it was refused, so there is no normalized path to show.
      path: safeTarget(req?.url),
      route: null,
      status,
      error: errorCode,
      durationMs: msBetween(startNs, process.hrtime.bigint()),
    },
    'request',
  );
}
