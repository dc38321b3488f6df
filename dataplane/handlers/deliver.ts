/**
 * Delivers an answer a handler composed itself (an aggregate's merged JSON, a SOAP answer turned
 * into JSON, their problems) to the route's ResponseSink, as if an upstream had sent it: so the
 * response plugins (cache, idempotency, transformers) and the client see it like any other.
 */
import { finished } from 'node:stream';
import type { ResponseSink } from '../upstream/call.ts';

export function deliverJson(sink: ResponseSink, status: number, type: string, doc: unknown): void {
  const bytes = Buffer.from(JSON.stringify(doc));
  const out = sink.response(status, { 'content-type': type, 'content-length': String(bytes.length) });
  finished(out, (err) => sink.end(err ? { code: 'SLC_ERR_INTERNAL', sent: true } : null));
  out.end(bytes);
}
