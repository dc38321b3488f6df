/**
 * Answers a request from a stored entry: the policy's headers (Age brought up to date,
 * hop-by-hop dropped), Cache-Status, the request id and what earlier plugins set for the
 * response, in one writeHead; a small body in the same write as the head (one-write.ts). A
 * client's If-None-Match that matches the stored ETag gets 304 (RFC 9110 §13.1.2).
 */
import { answered } from '../../pipeline/answer.ts';
import type { RequestContext } from '../../pipeline/context.ts';
import { endWithBody } from '../../upstream/one-write.ts';
import type { CacheEntry } from '../../stores/cache-store.ts';
import { notModifiedFor } from './policy.ts';

const NO_BODY = (status: number) => status === 204 || status === 304 || status < 200;

export function serveEntry(
  ctx: RequestContext,
  entry: CacheEntry,
  cacheStatus: string,
  headers: Record<string, string | string[]> = entry.policy.responseHeaders() as Record<string, string>,
): void {
  headers['cache-status'] = cacheStatus;
  headers['x-request-id'] = ctx.requestId;
  if (ctx.responseHeaders !== null) Object.assign(headers, ctx.responseHeaders);
  let status = entry.status;
  const inm = ctx.req.headers['if-none-match'];
  if (status === 200 && inm !== undefined && notModifiedFor(inm, headers.etag)) status = 304;
  const body = NO_BODY(status) ? null : entry.body;
  if (body !== null) headers['content-length'] = String(body.length);
  answered(ctx);
  ctx.res.writeHead(status, headers);
  endWithBody(ctx.res, ctx.method === 'HEAD' ? null : body);
}
