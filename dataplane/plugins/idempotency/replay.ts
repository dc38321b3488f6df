/**
 * What is stored of a response and how it is played back. Stored: the status, the body (up to
 * the cap) and the response headers except those that belong to one connection or one moment
 * (framing, Date, the request id) and Set-Cookie (a credential, never kept in the store).
 * A replay carries `Idempotent-Replayed: true`; one whose body was over the cap carries an
 * empty body and `X-Sluice-Replay-Body: omitted`, never a partial body.
 */
import type { StoredResponse } from '../../stores/idempotency-store.ts';
import { answered } from '../../pipeline/answer.ts';
import type { RequestContext } from '../../pipeline/context.ts';
import { endWithBody } from '../../upstream/one-write.ts';

const NOT_STORED = new Set([
  'content-length',
  'transfer-encoding',
  'connection',
  'keep-alive',
  'date',
  'x-request-id',
  'set-cookie',
]);

export function storedHeaders(headers: Record<string, string | string[] | undefined>): [string, string][] {
  const out: [string, string][] = [];
  for (const name in headers) {
    const v = headers[name];
    if (v === undefined || NOT_STORED.has(name)) continue;
    if (Array.isArray(v)) for (const one of v) out.push([name, one]);
    else out.push([name, v]);
  }
  return out;
}

const NO_BODY = (status: number) => status === 204 || status === 304 || status < 200;

export function replay(ctx: RequestContext, stored: StoredResponse): void {
  const res = ctx.res;
  const body = stored.bodyOmitted || NO_BODY(stored.status) ? null : stored.body;
  // A flat [name, value, …] list, as stored: no object to build; repeated names stay repeated
  // lines, also next to headers set earlier (CORS, deprecation: Node ≥ 24 appends them).
  const head: string[] = [];
  for (const [name, value] of stored.headers) head.push(name, value);
  head.push('idempotent-replayed', 'true');
  if (stored.bodyOmitted) head.push('x-sluice-replay-body', 'omitted');
  head.push('x-request-id', ctx.requestId);
  if (!NO_BODY(stored.status)) head.push('content-length', String(body?.length ?? 0));
  answered(ctx);
  res.writeHead(stored.status, head);
  endWithBody(res, ctx.method === 'HEAD' ? null : body);
}

/** 202 Accepted for an asynchronous operation (spec §4.3): the key is the operation id. */
export function accepted(
  ctx: RequestContext,
  key: string,
  operationsPrefix: string,
  retryAfter: string,
): void {
  const location = operationsPrefix + encodeURIComponent(key);
  const body = JSON.stringify({ operationId: key, status: 'IN_PROGRESS', location });
  answered(ctx);
  ctx.res.writeHead(202, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(body),
    location,
    'retry-after': retryAfter,
    'x-request-id': ctx.requestId,
  });
  ctx.res.end(ctx.method === 'HEAD' ? undefined : body);
}
