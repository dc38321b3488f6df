/**
 * grpc: answers an HTTP request with a gRPC call. Bound once per route: the protos parsed
 * (memoized by their text, config/proto-files.ts), the method and its message types, the
 * mapping, the channel of the upstream's address (channels.ts). Per request: the request
 * message assembled and checked (a bad body or parameter is a 400 and no call is made), the
 * listed headers as metadata, the endpoint picked as the proxy picks it (the upstream's
 * balance over its endpoints, upstream/pools.ts; none: 503, no call), the breaker asked, then
 * one call with the encoded bytes and a deadline of the upstream's request timeout, on the
 * endpoint's channel (the url's for an upstream without endpoints): unary (unary.ts) or server
 * streaming as NDJSON (server-stream.ts). Answers go through the route's ResponseSink like an
 * upstream's.
 */
import type { Abortable } from '../../upstream/abortable.ts';
import { Metadata } from '@grpc/grpc-js';
import { type FoundMethod, fieldNamed, findMethod, parseProtos } from '../../config/proto-files.ts';
import { type HttpTemplate, matchTemplate, parseTemplate } from '../../config/http-template.ts';
import { problem } from '../../errors/problem.ts';
import { rpcSpanAttributes, startRpcSpan } from '../../observability/tracing.ts';
import type { RequestContext } from '../../pipeline/context.ts';
import type { ResponseSink } from '../../upstream/call.ts';
import { ClientSink } from '../client-sink.ts';
import { deliver } from '../deliver.ts';
import { defineHandler } from '../types.ts';
import type { Binding, BoundCall } from './answer.ts';
import { acquire, channelKey, endpointClient, release } from './channels.ts';
import { JsonMismatch } from './json-mismatch.ts';
import { manifest } from './manifest.ts';
import { NO_MATCH, requestObject } from './request-message.ts';
import { serverStream } from './server-stream.ts';
import { unary } from './unary.ts';

export default defineHandler(manifest, {
  create(deps) {
    const keys: string[] = [];
    return {
      bind(_route, entry) {
        const parsed = parseProtos(entry.protos);
        if ('problem' in parsed) throw new Error(`grpc: ${parsed.problem.message}`); // the door refused it
        const method = findMethod(parsed.root, entry.service, entry.method) as FoundMethod;
        const up = deps.upstream(entry.upstream);
        const key = channelKey(up.origin);
        const address = new URL(key);
        const client = acquire(key);
        keys.push(key);
        const binding = (rule: { pattern?: string; body?: string; verb?: string }): Binding => ({
          verb: rule.verb ?? null,
          mapping: {
            request: method.request,
            pattern: rule.pattern === undefined ? null : (parseTemplate(rule.pattern) as HttpTemplate), // checked at the door
            body:
              rule.body === undefined
                ? null
                : rule.body === '*'
                  ? '*'
                  : fieldNamed(method.request, rule.body)!,
          },
        });
        const bound: BoundCall = {
          client,
          key,
          host: new URL(up.origin).host,
          up,
          method,
          bindings: [entry, ...(entry.additionalBindings ?? [])].map(binding),
          deadlineMs: up.requestMs || up.headersTimeout,
          requestHeaders: entry.requestHeaders,
          responseHeaders: entry.responseHeaders,
          metrics: deps.metrics,
          spanName: method.path.slice(1),
          spanAttributes: rpcSpanAttributes(method.path, address.hostname, Number(address.port)),
        };
        return {
          handle: (ctx) => start(bound, ctx, new ClientSink(ctx), ctx.signal),
          call: (ctx, sink) => start(bound, ctx, sink),
        };
      },
      close() {
        for (const key of keys.splice(0)) release(key);
      },
    };
  },
});

// Returns what sink.end or deliver return (nothing): `return sink.end(…)` ends a branch.
// `signal`: the client's when the answer goes to it (none for a call in the background).
function start(b: BoundCall, ctx: RequestContext, sink: ResponseSink, signal?: Abortable) {
  const request = b.method.request;
  let bytes: Uint8Array | null = null;
  // The first binding whose method and path fit; one whose path fits another method's: 405.
  let otherMethod = false;
  for (const { verb, mapping } of b.bindings) {
    try {
      if (verb !== null && ctx.method !== verb) {
        otherMethod ||= mapping.pattern === null || matchTemplate(mapping.pattern, ctx.path) !== null;
        continue;
      }
      const obj = requestObject(mapping, ctx.path, ctx.query, ctx.body);
      if (obj === NO_MATCH) continue;
      bytes = request.encode(request.fromObject(obj)).finish();
      break;
    } catch (err) {
      if (!(err instanceof JsonMismatch)) throw err;
      const doc = problem(err.code, err.message, { field: err.field, requestId: ctx.requestId });
      return deliver(
        sink,
        400,
        { 'content-type': 'application/problem+json' },
        Buffer.from(JSON.stringify(doc)),
      );
    }
  }
  if (bytes === null)
    return sink.end({
      code: otherMethod ? 'SLC_ERR_METHOD_NOT_ALLOWED' : 'SLC_ERR_ROUTE_NOT_FOUND',
      sent: false,
    });
  const md = new Metadata();
  try {
    for (const name of b.requestHeaders) {
      const v = ctx.headers[name];
      if (v !== undefined) md.set(name, v);
    }
  } catch {
    return sink.end({ code: 'SLC_ERR_BAD_HEADER', sent: false }); // a value gRPC metadata cannot carry
  }
  md.set('x-request-id', ctx.requestId);
  const up = b.up;
  // Before the breaker, as the proxy: a half-open breaker's probe is not spent on a call that cannot go.
  const endpoint = up.pick(ctx.headers, null);
  if (endpoint === null) return sink.end({ code: 'SLC_ERR_UPSTREAM_NO_ENDPOINTS', sent: false });
  if (up.breaker !== null && !up.breaker.allow())
    return sink.end({ code: 'SLC_ERR_UPSTREAM_CIRCUIT_OPEN', sent: false });
  // The url's own host (an upstream without endpoints): its channel, shared by address.
  const client = endpoint.key === b.host ? b.client : endpointClient(endpoint, b.key);
  const message = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  // One client span per call (grpc-js makes no retries here), its traceparent in the metadata.
  const span = ctx.span === null ? null : startRpcSpan(ctx.span, b.spanName, b.spanAttributes, md, endpoint);
  if (signal?.aborted) return sink.end({ code: 'SLC_ERR_CLIENT_CLOSED', sent: false });
  const c = b.method.method.responseStream
    ? serverStream(b, client, sink, message, md, ctx.requestId, span)
    : unary(b, client, sink, message, md, ctx.requestId, span);
  // Counted until its status, as the proxy counts a try: what least-request reads.
  endpoint.inFlight++;
  if (signal === undefined) {
    c.on('status', () => endpoint.inFlight--);
    return;
  }
  // The client gone: the call is cancelled on the service (RST_STREAM CANCEL on its channel).
  const cancel = () => c.cancel();
  signal.addEventListener('abort', cancel, { once: true });
  c.on('status', () => {
    endpoint.inFlight--;
    signal.removeEventListener('abort', cancel);
  });
}
