/**
 * The end of every request the gateway answers or forwards: one metric sample and one access-log
 * line, whatever path it took (refused at ingress, answered by a plugin, failed, proxied).
 */
import type { IncomingMessage } from 'node:http';
import type { Logger } from 'pino';
import type { Metrics } from '../observability/metrics.ts';
import type { RequestContext } from './context.ts';

/** What the server records with before any route is known. */
export interface Observers {
  metrics: Metrics;
  log: Logger;
  accessLog: boolean;
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
  if (!deps.accessLog && err === undefined) return;
  const line = {
    requestId: ctx.requestId,
    method: ctx.method,
    path: ctx.path,
    route: route.id,
    status,
    upstreamStatus: ctx.status || undefined,
    error: errorCode ?? undefined,
    durationMs: Number(process.hrtime.bigint() - ctx.startNs) / 1e6,
    consumer: ctx.consumer?.id,
    client: ctx.clientAddress,
  };
  if (err === undefined) deps.log.info(line, 'request');
  else deps.log.error({ ...line, err }, 'request failed');
}

/** A request refused before it had a route (bad target, headers, method, no config yet, no route). */
export function finishRefused(
  obs: Observers,
  req: IncomingMessage | null,
  status: number,
  errorCode: string,
  requestId: string | undefined,
  startNs: bigint,
): void {
  obs.metrics.request('(none)', req?.method ?? '', status, startNs);
  if (!obs.accessLog) return;
  obs.log.info(
    {
      requestId,
      method: req?.method,
      // The raw target, bounded: it was refused, so there is no normalized path to show.
      target: req?.url?.slice(0, 256),
      route: null,
      status,
      error: errorCode,
      durationMs: Number(process.hrtime.bigint() - startNs) / 1e6,
    },
    'request',
  );
}
