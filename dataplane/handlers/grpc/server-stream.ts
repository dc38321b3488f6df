/**
 * A server-streaming call answered as NDJSON (application/x-ndjson): one line of proto3 JSON per
 * message, written as it arrives, with the client's backpressure passed on to the stream. The
 * 200 head waits for the first message, so a call that fails before any is answered like a
 * unary one (its status as the HTTP status, a problem); one that fails after lines were sent can
 * only be cut, like a proxied body whose upstream dies (the client sees no clean end). The
 * deadline bounds the whole stream.
 */
import type { Client, ClientReadableStream, Metadata, StatusObject } from '@grpc/grpc-js';
import { finished, type Writable } from 'node:stream';
import type { Span } from '../../observability/tracing.ts';
import type { ResponseSink } from '../../upstream/call.ts';
import { deliver } from '../deliver.ts';
import { asIs, type BoundCall, deliverStatus, responseHeaders, settled } from './answer.ts';
import { toJson } from './json.ts';

export const NDJSON = 'application/x-ndjson';

export function serverStream(
  b: BoundCall,
  client: Client,
  sink: ResponseSink,
  request: Buffer,
  md: Metadata,
  requestId: string,
  span: Span | null,
): ClientReadableStream<Buffer> {
  const start = process.hrtime.bigint();
  const type = b.method.response;
  let initial: Metadata | null = null;
  let out: Writable | null = null;
  let failed = false;
  const c: ClientReadableStream<Buffer> = client.makeServerStreamRequest(
    b.method.path,
    asIs,
    asIs,
    request,
    md,
    {
      deadline: Date.now() + b.deadlineMs,
    },
  );
  c.on('metadata', (m: Metadata) => {
    initial = m;
  });
  c.on('data', (message: Buffer) => {
    if (failed) return;
    let line: string;
    try {
      line = `${JSON.stringify(toJson(type, type.decode(message)))}\n`;
    } catch {
      failed = true;
      c.cancel();
      return sink.end({ code: 'SLC_ERR_UPSTREAM_BAD_RESPONSE', sent: out !== null });
    }
    if (out === null) {
      const headers = responseHeaders(b.responseHeaders, initial, null);
      headers['content-type'] = NDJSON;
      out = sink.response(200, headers);
      out.on('drain', () => c.resume());
      // The client went away (or a tap failed): the stream is cancelled on the service.
      finished(out, { readable: false }, (err) => {
        if (err) {
          failed = true;
          c.cancel();
        }
      });
    }
    if (!out.write(line)) c.pause();
  });
  c.on('error', () => {}); // the status event says it, with the trailers
  c.on('status', (s: StatusObject) => {
    settled(b, s, start, span);
    if (failed) return;
    if (s.code !== 0) {
      if (out === null)
        return deliverStatus(sink, s, requestId, responseHeaders(b.responseHeaders, initial, s.metadata));
      return sink.end({ code: 'SLC_ERR_GRPC_STATUS', sent: true }); // lines were sent: cut
    }
    if (out === null) {
      const headers = responseHeaders(b.responseHeaders, initial, s.metadata);
      headers['content-type'] = NDJSON;
      return deliver(sink, 200, headers, Buffer.alloc(0));
    }
    const body = out;
    finished(body, (err) => sink.end(err ? { code: 'SLC_ERR_INTERNAL', sent: true } : null));
    body.end();
  });
  return c;
}
