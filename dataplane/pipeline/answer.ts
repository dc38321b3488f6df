/** A hook that answers the request itself: the problem, the end of the chain, metrics and the access log. */
import type { ErrorCode } from '../errors/codes.ts';
import { sendProblem } from '../errors/problem.ts';
import type { RequestContext } from './context.ts';
import { finishRequest } from './finish.ts';

export function answerProblem(
  ctx: RequestContext,
  code: ErrorCode,
  opts: { detail?: string; headers?: Record<string, string>; close?: boolean } = {},
): void {
  ctx.done = true;
  sendProblem(ctx.res, code, { ...opts, requestId: ctx.requestId });
  finishRequest(ctx, code);
}

/** Ends the chain with a response written by the caller (a replay, a 202). */
export function answered(ctx: RequestContext): void {
  ctx.done = true;
  ctx.res.once('finish', () => finishRequest(ctx, null));
}
