/** The end of every request: metrics and the access log line. */
import type { RequestContext } from '../pipeline/context.ts';

export function finishRequest(ctx: RequestContext, errorCode: string | null): void {
  const route = ctx.route;
  const status = ctx.res.statusCode;
  route.deps.metrics.request(route.id, ctx.method, status, ctx.startNs);
  if (route.deps.accessLog) {
    route.deps.log.info(
      {
        requestId: ctx.requestId,
        method: ctx.method,
        path: ctx.path,
        route: route.id,
        status,
        upstreamStatus: ctx.status || undefined,
        error: errorCode ?? undefined,
        durationMs: Number(process.hrtime.bigint() - ctx.startNs) / 1e6,
        consumer: ctx.consumer?.id,
      },
      'request',
    );
  }
}
