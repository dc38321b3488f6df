/** A unary call: one message each way; the answer is the response message as proto3 JSON. */
import type { Client, ClientUnaryCall, Metadata, ServiceError, StatusObject } from '@grpc/grpc-js';
import type { Span } from '../../observability/tracing.ts';
import type { ResponseSink } from '../../upstream/call.ts';
import { deliver } from '../deliver.ts';
import { asIs, type BoundCall, deliverStatus, responseHeaders, settled } from './answer.ts';
import { toJson } from './json.ts';

export function unary(
  b: BoundCall,
  client: Client,
  sink: ResponseSink,
  request: Buffer,
  md: Metadata,
  requestId: string,
  span: Span | null,
): ClientUnaryCall {
  const start = process.hrtime.bigint();
  let initial: Metadata | null = null;
  let answer: Buffer | null = null;
  const c = client.makeUnaryRequest(
    b.method.path,
    asIs,
    asIs,
    request,
    md,
    { deadline: Date.now() + b.deadlineMs },
    (err: ServiceError | null, value?: Buffer) => {
      if (err === null) answer = value ?? null;
    },
  );
  if (b.responseHeaders.length)
    c.on('metadata', (m: Metadata) => {
      initial = m;
    });
  // grpc-js emits the status right after the callback, with the trailers.
  c.on('status', (s: StatusObject) => {
    settled(b, s, start, span);
    const headers = responseHeaders(b.responseHeaders, initial, s.metadata);
    if (s.code !== 0 || answer === null) return deliverStatus(sink, s, requestId, headers);
    let doc: unknown;
    try {
      doc = toJson(b.method.response, b.method.response.decode(answer));
    } catch {
      return sink.end({ code: 'SLC_ERR_UPSTREAM_BAD_RESPONSE', sent: true });
    }
    headers['content-type'] = 'application/json';
    deliver(sink, 200, headers, Buffer.from(JSON.stringify(doc)));
  });
  return c;
}
