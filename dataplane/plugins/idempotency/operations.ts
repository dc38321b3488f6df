/**
 * Asynchronous operations (spec §4.3): the first request is answered 202 at once, with the key
 * as operation id and a Location under the operations path; the upstream call runs in the
 * background under the record's lease and its response is stored. GET <operationsPath>/<key>
 * reads the record of the same caller only: 202 while it runs, the stored response once done.
 */
import { Writable } from 'node:stream';
import { answerProblem } from '../../pipeline/answer.ts';
import type { RequestContext } from '../../pipeline/context.ts';
import type { IdempotencyStore } from '../../stores/idempotency-store.ts';
import type { CallFailure } from '../../upstream/call.ts';
import type { Execution } from './execution.ts';
import { accepted, replay, storedHeaders } from './replay.ts';
import { callerScope, recordId } from './scope.ts';
import type { Settings } from './settings.ts';

/**
 * Runs the route's handler for an accepted operation (the same upstream call, breaker and
 * retries as a request in the foreground) to its end, and stores the response.
 */
export function runInBackground(ctx: RequestContext, execution: Execution, maxBytes: number): Promise<void> {
  return new Promise<void>((resolve) => {
    let response: { status: number; headers: Record<string, string | string[]> } | null = null;
    const chunks: Buffer[] = [];
    let size = 0;
    ctx.route.handler.call(ctx, {
      response(status, headers) {
        response = { status, headers };
        const hooks = ctx.route.responseHooks;
        if (hooks !== null) for (const h of hooks) h(ctx, response.headers);
        return new Writable({
          write(chunk: Buffer, _encoding, callback) {
            size += chunk.length;
            if (size <= maxBytes) chunks.push(chunk);
            callback();
          },
        });
      },
      end(failure: CallFailure | null) {
        if (failure !== null || response === null) {
          execution.fail(failure?.sent ?? true);
          ctx.route.deps.log.warn(
            { error: failure?.code, route: ctx.route.id, requestId: ctx.requestId },
            'asynchronous operation failed',
          );
          return resolve();
        }
        const r = response as { status: number; headers: Record<string, string | string[]> };
        execution
          .complete({
            status: r.status,
            headers: storedHeaders(r.headers),
            body: size <= maxBytes ? Buffer.concat(chunks, size) : Buffer.alloc(0),
            bodyOmitted: size > maxBytes,
          })
          .then(resolve, resolve);
      },
    });
  });
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
