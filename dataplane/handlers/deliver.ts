/**
 * A response a handler made itself (an aggregate's merged JSON, a gRPC or SOAP answer turned
 * into JSON, their problems), whole in memory, delivered through the route's ResponseSink, so the
 * response plugins (cache, idempotency, transformers) and the client see it like an upstream's.
 */
import { finished } from 'node:stream';
import type { ResponseSink } from '../upstream/call.ts';

export function deliver(
  sink: ResponseSink,
  status: number,
  headers: Record<string, string | string[]>,
  bytes: Buffer,
): void {
  // 204 and 304 have no body and no Content-Length to say so (RFC 9110 §8.6).
  if (status !== 204 && status !== 304) headers['content-length'] = String(bytes.length);
  const out = sink.response(status, headers);
  finished(out, (err) => sink.end(err ? { code: 'SLC_ERR_INTERNAL', sent: true } : null));
  out.end(bytes);
}

/** A JSON document (or problem) as the whole answer, `type` its content type. */
export function deliverJson(sink: ResponseSink, status: number, type: string, doc: unknown): void {
  deliver(sink, status, { 'content-type': type }, Buffer.from(JSON.stringify(doc)));
}
