/**
 * What a grpc route's calls share once bound (BoundCall), and how a call's end becomes the
 * HTTP answer: the listed metadata as headers, a gRPC error status as its HTTP status (status.ts)
 * with a problem naming it, and the service's circuit breaker and latency fed.
 */
import type { Client, Metadata, StatusObject } from '@grpc/grpc-js';
import type { FoundMethod } from '../../config/proto-files.ts';
import { ERRORS } from '../../errors/codes.ts';
import { problem } from '../../errors/problem.ts';
import type { Metrics } from '../../observability/metrics.ts';
import { type Attributes, endRpcSpan, type Span } from '../../observability/tracing.ts';
import type { ResponseSink } from '../../upstream/call.ts';
import type { UpstreamRuntime } from '../../upstream/pools.ts';
import { deliver } from '../deliver.ts';
import { localFailure } from './local-status.ts';
import type { BoundMapping } from './request-message.ts';
import { BREAKER_FAILURES, httpOfGrpc } from './status.ts';

/** One HTTP binding of the method: the HTTP method it serves (null: any the route matches) and its mapping. */
export interface Binding {
  verb: string | null;
  mapping: BoundMapping;
}

/** A route's call, bound once per snapshot. */
export interface BoundCall {
  /** The channel of the url's address (channels.ts acquire), and its key (channelKey). */
  client: Client;
  key: string;
  /** What the upstream's Endpoint keys the url's own host by: pick gives it when there are no endpoints. */
  host: string;
  up: UpstreamRuntime;
  method: FoundMethod;
  /** How a request becomes the message: one binding, or an annotation's bindings in order. */
  bindings: readonly Binding[];
  deadlineMs: number;
  requestHeaders: readonly string[];
  responseHeaders: readonly string[];
  metrics: Metrics;
  /** The call's client span (tracing on): its name and attributes, computed once. */
  spanName: string;
  spanAttributes: Attributes;
}

/** The gateway's words for statuses grpc-js also makes itself (its text may name addresses). */
const OWN_DETAIL: Record<number, string> = {
  1: 'the call was cancelled',
  4: 'the gRPC service did not answer within the deadline',
  14: 'the gRPC service is unavailable',
};

/** The call is over (its status received): the breaker, the latency metric and its span (if any) learn of it. */
export function settled(b: BoundCall, s: StatusObject, startNs: bigint, span: Span | null): void {
  b.up.breaker?.record(!BREAKER_FAILURES.has(s.code));
  b.metrics.upstreamLatency(b.up.id, startNs);
  if (span !== null) endRpcSpan(span, s.code, httpOfGrpc(s.code).name, s.details);
}

/**
 * A gRPC error status answered as its HTTP status, with a problem carrying grpcStatus and the
 * service's message; one grpc-js made itself (local-status.ts) is the gateway's failure to
 * complete the call: 502, in the gateway's words, never the library's text.
 */
export function deliverStatus(
  sink: ResponseSink,
  s: StatusObject,
  requestId: string,
  headers: Record<string, string | string[]>,
): void {
  const local = OWN_DETAIL[s.code] === undefined ? localFailure(s) : null;
  let status: number;
  let doc: ReturnType<typeof problem>;
  if (local !== null) {
    status = ERRORS.SLC_ERR_GRPC_CALL_FAILED.status;
    doc = problem('SLC_ERR_GRPC_CALL_FAILED', local, { requestId });
  } else {
    const mapped = httpOfGrpc(s.code === 0 ? 2 : s.code); // OK without a message: UNKNOWN
    status = mapped.status;
    doc = problem('SLC_ERR_GRPC_STATUS', OWN_DETAIL[s.code] ?? s.details, {
      status,
      grpcStatus: mapped.name,
      requestId,
    });
  }
  headers['content-type'] = 'application/problem+json';
  deliver(sink, status, headers, Buffer.from(JSON.stringify(doc)));
}

/** The listed metadata, from the response headers then the trailers, as HTTP headers. */
export function responseHeaders(
  names: readonly string[],
  initial: Metadata | null,
  trailers: Metadata | null,
): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const name of names) {
    const values = [...(initial?.get(name) ?? []), ...(trailers?.get(name) ?? [])].filter(
      (v): v is string => typeof v === 'string',
    );
    if (values.length) out[name] = values.length === 1 ? values[0] : values;
  }
  return out;
}

export const asIs = (b: Buffer) => b;
