/**
 * A response the handler made itself (an aggregate's merged JSON, a gRPC answer as JSON, their
 * problems), whole in memory, delivered through the route's ResponseSink so response plugins
 * (cache, idempotency, transformers) see it like an upstream's.
 */
import { finished } from 'node:stream';
import type { ResponseSink } from '../upstream/call.ts';

export function deliver(
  sink: ResponseSink,
  status: number,
  headers: Record<string, string | string[]>,
  bytes: Buffer,
): void {
  headers['content-length'] = String(bytes.length);
  const out = sink.response(status, headers);
  finished(out, (err) => sink.end(err ? { code: 'SLC_ERR_INTERNAL', sent: true } : null));
  out.end(bytes);
}
