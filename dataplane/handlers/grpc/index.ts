/**
 * grpc: answers an HTTP request with a unary gRPC call. Bound once per route: the protos parsed
 * (memoized by their text, protos.ts), the method and its message types, the mapping, the
 * channel of the upstream's address (channels.ts). Per request: the request message assembled
 * and checked (a bad body or parameter is a 400 and no call is made), the breaker asked, one
 * makeUnaryRequest with the encoded bytes and a deadline of the upstream's request timeout, the
 * answer decoded to proto3 JSON, or its gRPC status as the HTTP status (status.ts) with a
 * problem naming it. Answers go through the route's ResponseSink like an upstream's.
 */
import { type Client, Metadata, type ServiceError, type StatusObject } from '@grpc/grpc-js';
import { problem } from '../../errors/problem.ts';
import type { Metrics } from '../../observability/metrics.ts';
import type { RequestContext } from '../../pipeline/context.ts';
import { template } from '../../config/template.ts';
import { compilePathRewrite } from '../../pipeline/transform/path-rewrite.ts';
import type { ResponseSink } from '../../upstream/call.ts';
import type { UpstreamRuntime } from '../../upstream/pools.ts';
import { ClientSink } from '../client-sink.ts';
import { deliver } from '../deliver.ts';
import { defineHandler } from '../types.ts';
import { acquire, channelKey, release } from './channels.ts';
import { JsonMismatch, toJson } from './json.ts';
import { manifest } from './manifest.ts';
import { type FoundMethod, fieldNamed, findMethod, parseProtos } from '../../config/proto-files.ts';
import { type BoundMapping, NO_MATCH, requestObject } from './request-message.ts';
import { BREAKER_FAILURES, httpOfGrpc } from './status.ts';

/** A route's call, bound once per snapshot. */
interface BoundCall {
  client: Client;
  up: UpstreamRuntime;
  method: FoundMethod;
  mapping: BoundMapping;
  verb: string | null;
  deadlineMs: number;
  requestHeaders: readonly string[];
  responseHeaders: readonly string[];
  metrics: Metrics;
}

/** The gateway's words for statuses grpc-js also makes itself (its text may name addresses). */
const OWN_DETAIL: Record<number, string> = {
  1: 'the call was cancelled',
  4: 'the gRPC service did not answer within the deadline',
  14: 'the gRPC service is unavailable',
};

const asIs = (b: Buffer) => b;

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
        const client = acquire(key);
        keys.push(key);
        const body =
          entry.body === undefined
            ? null
            : entry.body === '*'
              ? '*'
              : fieldNamed(method.request, entry.body)!;
        const bound: BoundCall = {
          client,
          up,
          method,
          mapping: {
            request: method.request,
            pattern:
              entry.pattern === undefined
                ? null
                : compilePathRewrite({ pattern: entry.pattern, rewrite: '/' }, template),
            body,
          },
          verb: entry.verb ?? null,
          deadlineMs: up.requestMs || up.headersTimeout,
          requestHeaders: entry.requestHeaders,
          responseHeaders: entry.responseHeaders,
          metrics: deps.metrics,
        };
        const call = (ctx: RequestContext, sink: ResponseSink) => unary(bound, ctx, sink);
        return { handle: (ctx) => call(ctx, new ClientSink(ctx)), call };
      },
      close() {
        for (const key of keys.splice(0)) release(key);
      },
    };
  },
});

// Returns what sink.end or deliver return (nothing): `return sink.end(…)` ends a branch.
function unary(b: BoundCall, ctx: RequestContext, sink: ResponseSink) {
  if (b.verb !== null && ctx.method !== b.verb)
    return sink.end({ code: 'SLC_ERR_METHOD_NOT_ALLOWED', sent: false });
  const request = b.method.request;
  let bytes: Uint8Array;
  try {
    const obj = requestObject(b.mapping, ctx.path, ctx.query, ctx.body);
    if (obj === NO_MATCH) return sink.end({ code: 'SLC_ERR_ROUTE_NOT_FOUND', sent: false });
    bytes = request.encode(request.fromObject(obj)).finish();
  } catch (err) {
    if (!(err instanceof JsonMismatch)) throw err;
    const doc = problem('SLC_ERR_BAD_REQUEST', err.message, { field: err.field, requestId: ctx.requestId });
    return deliver(
      sink,
      400,
      { 'content-type': 'application/problem+json' },
      Buffer.from(JSON.stringify(doc)),
    );
  }
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
  if (up.breaker !== null && !up.breaker.allow())
    return sink.end({ code: 'SLC_ERR_UPSTREAM_CIRCUIT_OPEN', sent: false });
  const start = process.hrtime.bigint();
  let headers: Metadata | null = null;
  let answer: Buffer | null = null;
  const c = b.client.makeUnaryRequest(
    b.method.path,
    asIs,
    asIs,
    Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength),
    md,
    { deadline: Date.now() + b.deadlineMs },
    (err: ServiceError | null, value?: Buffer) => {
      if (err === null) answer = value ?? null;
    },
  );
  c.on('metadata', (m: Metadata) => {
    headers = m;
  });
  // grpc-js emits the status right after the callback, with the trailers.
  c.on('status', (s: StatusObject) => answered(b, ctx, sink, s, headers, answer, start));
}

function answered(
  b: BoundCall,
  ctx: RequestContext,
  sink: ResponseSink,
  s: StatusObject,
  initial: Metadata | null,
  answer: Buffer | null,
  start: bigint,
) {
  b.up.breaker?.record(!BREAKER_FAILURES.has(s.code));
  b.metrics.upstreamLatency(b.up.id, start);
  const out = responseHeaders(b.responseHeaders, initial, s.metadata);
  if (s.code === 0 && answer !== null) {
    let doc: Record<string, unknown>;
    try {
      const type = b.method.response;
      doc = toJson(type, type.decode(answer));
    } catch {
      return sink.end({ code: 'SLC_ERR_UPSTREAM_BAD_RESPONSE', sent: true });
    }
    out['content-type'] = 'application/json';
    return deliver(sink, 200, out, Buffer.from(JSON.stringify(doc)));
  }
  const { name, status } = httpOfGrpc(s.code === 0 ? 2 : s.code); // OK without a message: UNKNOWN
  const doc = problem('SLC_ERR_GRPC_STATUS', OWN_DETAIL[s.code] ?? s.details, {
    status,
    grpcStatus: name,
    requestId: ctx.requestId,
  });
  out['content-type'] = 'application/problem+json';
  deliver(sink, status, out, Buffer.from(JSON.stringify(doc)));
}

/** The listed metadata, from the response headers then the trailers, as HTTP headers. */
function responseHeaders(
  names: readonly string[],
  initial: Metadata | null,
  trailers: Metadata,
): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const name of names) {
    const values = [...(initial?.get(name) ?? []), ...trailers.get(name)].filter(
      (v): v is string => typeof v === 'string',
    );
    if (values.length) out[name] = values.length === 1 ? values[0] : values;
  }
  return out;
}
