/**
 * The one chain runner, for plain requests and HTTP/1.1 upgrades alike: a route's request hooks
 * in phase order, the request body read once where the route first needs it, then the route's
 * handler (or its upgrade). Synchronous hooks run in a plain loop; a hook's promise resumes the
 * loop where it stopped, so a chain of synchronous plugins costs no await.
 *
 * Nothing a hook or a handler throws, synchronously or by rejecting, escapes: the request gets
 * a 500 problem, one access-log line (at error level, with the error) and one metric sample.
 */
import { sendProblem } from '../errors/problem.ts';
import { BodyTooLargeError } from '../upstream/errors.ts';
import { answerProblem } from './answer.ts';
import type { RequestContext } from './context.ts';
import { finishRequest } from './finish.ts';
import { readBody } from '../upstream/body.ts';

const EMPTY = Buffer.alloc(0);

export function runChain(ctx: RequestContext): void {
  step(ctx, 0);
}

function step(ctx: RequestContext, from: number): void {
  const route = ctx.route;
  const hooks = route.requestHooks;
  const n = hooks === null ? 0 : hooks.length;
  try {
    for (let i = from; i < n; i++) {
      if (i === route.bodyAt && ctx.body === null) {
        readBodyThen(ctx, i);
        return;
      }
      const r = hooks![i](ctx);
      if (r !== undefined) {
        r.then(
          () => {
            if (!ctx.done) step(ctx, i + 1);
          },
          (err) => fail(ctx, err),
        );
        return;
      }
      if (ctx.done) return;
    }
    if (n === route.bodyAt && ctx.body === null) {
      readBodyThen(ctx, n);
      return;
    }
    const up = ctx.upgrade;
    if (up === null) route.handler.handle(ctx);
    else route.handler.upgrade!(ctx, up.socket, up.head);
  } catch (err) {
    fail(ctx, err);
  }
}

/** Reads the body (bounded), then goes on from hook `at`. */
function readBodyThen(ctx: RequestContext, at: number): void {
  if (!ctx.hasBody) {
    ctx.body = EMPTY;
    step(ctx, at);
    return;
  }
  readBody(ctx.req, ctx.route.maxBodyBytes).then(
    (body) => {
      ctx.body = body;
      step(ctx, at);
    },
    (err) => {
      if (err instanceof BodyTooLargeError) answerProblem(ctx, 'SLC_ERR_BODY_TOO_LARGE', { close: true });
      // The client went away mid-body: nothing to answer.
      else if (ctx.req.destroyed || ctx.res.destroyed) finishRequest(ctx, 'SLC_ERR_BAD_REQUEST');
      else fail(ctx, err);
    },
  );
}

function fail(ctx: RequestContext, err: unknown): void {
  if (ctx.finished) {
    // The request was already answered and counted: the error still gets its line.
    ctx.route.deps.log.error({ err, requestId: ctx.requestId, route: ctx.route.id }, 'plugin failed');
    return;
  }
  ctx.done = true;
  sendProblem(ctx.res, 'SLC_ERR_INTERNAL', { requestId: ctx.requestId, traceId: ctx.traceId });
  finishRequest(ctx, 'SLC_ERR_INTERNAL', err);
}
