/**
 * Runs a route's request hooks in phase order, then its handler. Synchronous hooks run in a
 * plain loop; the first promise switches to an async continuation, so a chain of synchronous
 * plugins costs no await.
 */
import { sendProblem } from '../errors/problem.ts';
import type { RequestContext, RequestHook } from './context.ts';

export function runChain(ctx: RequestContext): void {
  const hooks = ctx.route.requestHooks;
  if (hooks !== null) {
    for (let i = 0; i < hooks.length; i++) {
      const r = hooks[i](ctx);
      if (r !== undefined) {
        r.then(
          () => continueAsync(ctx, hooks, i + 1),
          (err) => fail(ctx, err),
        );
        return;
      }
      if (ctx.done) return;
    }
  }
  ctx.route.handler(ctx);
}

async function continueAsync(ctx: RequestContext, hooks: RequestHook[], from: number): Promise<void> {
  if (ctx.done) return;
  try {
    for (let i = from; i < hooks.length; i++) {
      const r = hooks[i](ctx);
      if (r !== undefined) await r;
      if (ctx.done) return;
    }
  } catch (err) {
    fail(ctx, err);
    return;
  }
  ctx.route.handler(ctx);
}

function fail(ctx: RequestContext, err: unknown): void {
  ctx.route.deps.log.error({ err, requestId: ctx.requestId, route: ctx.route.id }, 'plugin failed');
  ctx.done = true;
  sendProblem(ctx.res, 'SLC_ERR_INTERNAL', { requestId: ctx.requestId });
}
