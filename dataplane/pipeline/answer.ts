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
  sendProblem(ctx.res, code, { ...opts, requestId: ctx.requestId, traceId: ctx.traceId });
  finishRequest(ctx, code);
}

/** Ends the chain with a response written by the caller (a replay, a 202). */
export function answered(ctx: RequestContext): void {
  ctx.done = true;
  ctx.res.once('finish', () => finishRequest(ctx, null));
}

/**
 * One credential, one reading: a credential header the client sent on two lines is refused
 * with 400 (its values were joined at ingress and must never be read as one). True if refused.
 */
export function refusedRepeated(ctx: RequestContext, names: readonly string[]): boolean {
  const repeated = ctx.repeatedHeaders;
  if (repeated === null) return false;
  for (const n of names) {
    if (repeated.has(n)) {
      answerProblem(ctx, 'SLC_ERR_BAD_HEADER', { detail: `${n} is sent more than once` });
      return true;
    }
  }
  return false;
}
