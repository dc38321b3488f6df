/**
 * Asynchronous operations (spec §4.3): the first request is answered 202 at once, with the key
 * as operation id and a Location under the operations path; the upstream call runs in the
 * background under the record's lease and its response is stored. GET <operationsPath>/<key>
 * reads the record of the same caller only: 202 while it runs, the stored response once done.
 */
import type { Dispatcher } from 'undici';
import { answerProblem } from '../../pipeline/answer.ts';
import type { RequestContext } from '../../pipeline/context.ts';
import type { IdempotencyStore } from '../../stores/idempotency-store.ts';
import { mayHaveReachedUpstream } from '../../upstream/errors.ts';
import { upstreamPath } from '../../upstream/proxy.ts';
import type { Execution } from './execution.ts';
import { accepted, replay, storedHeaders } from './replay.ts';
import { callerScope, recordId } from './scope.ts';
import type { Settings } from './settings.ts';

/** Runs the upstream call of an accepted operation to its end and stores the response. */
export async function runInBackground(
  ctx: RequestContext,
  execution: Execution,
  body: Buffer,
  maxBytes: number,
) {
  const up = ctx.route.upstream;
  try {
    const res = await up.pool.request({
      path: upstreamPath(ctx),
      method: ctx.method as Dispatcher.HttpMethod,
      headers: ctx.headers,
      body,
      headersTimeout: up.headersTimeout,
      bodyTimeout: up.bodyTimeout,
    });
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of res.body) {
      size += (chunk as Buffer).length;
      if (size <= maxBytes) chunks.push(chunk as Buffer);
    }
    const headers = res.headers as Record<string, string | string[]>;
    const hooks = ctx.route.responseHooks;
    if (hooks !== null) for (const h of hooks) h(ctx, headers);
    await execution.complete({
      status: res.statusCode,
      headers: storedHeaders(headers),
      body: size <= maxBytes ? Buffer.concat(chunks, size) : Buffer.alloc(0),
      bodyOmitted: size > maxBytes,
    });
  } catch (err) {
    execution.fail(mayHaveReachedUpstream(err));
    ctx.route.deps.log.warn(
      { err, route: ctx.route.id, requestId: ctx.requestId },
      'asynchronous operation failed',
    );
  }
}

export async function lookupOperation(
  ctx: RequestContext,
  s: Settings,
  store: IdempotencyStore,
): Promise<void> {
  const prefix = s.operationsPrefix!;
  const raw = ctx.path.slice(prefix.length);
  let key = '';
  try {
    key = decodeURIComponent(raw);
  } catch {}
  if (raw.includes('/') || key.length < s.minKey || key.length > s.maxKey)
    return answerProblem(ctx, 'SLC_ERR_OPERATION_NOT_FOUND');
  const scope = callerScope(ctx);
  if (scope === null) return answerProblem(ctx, 'SLC_ERR_IDENTITY_REQUIRED');
  let record: Awaited<ReturnType<IdempotencyStore['get']>>;
  try {
    record = await store.get(recordId(scope, key));
  } catch {
    return answerProblem(ctx, 'SLC_ERR_IDEMPOTENCY_STORE_UNAVAILABLE', {
      headers: { 'retry-after': s.retryAfter },
    });
  }
  if (record === null) return answerProblem(ctx, 'SLC_ERR_OPERATION_NOT_FOUND');
  if (record.state === 'IN_PROGRESS') return accepted(ctx, key, prefix, s.retryAfter);
  replay(ctx, record.response!);
}
