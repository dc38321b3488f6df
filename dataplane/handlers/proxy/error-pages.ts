/**
 * Error pages (ingress-nginx's custom-http-errors with a default-backend): an upstream answer of
 * one of the listed statuses is not delivered; its body is read and dropped, and the request is
 * answered by the error upstream instead, whose answer (status, headers, body) the client gets.
 * A request the upstream has no endpoint for goes there too (ingress-nginx's default-backend:
 * "when the Service has no active endpoints"), as X-Code 503.
 *
 * The error request is ingress-nginx's: the request's method and headers (not its body, already
 * streamed to the upstream), path "/", and X-Code (the status), X-Format (the Accept header),
 * X-Original-URI (the request target as the client sent it), X-Request-ID, and the entry's
 * literal headers (X-Namespace, X-Ingress-Name, X-Service-Name, X-Service-Port).
 */
import type { Abortable } from '../../upstream/abortable.ts';
import { Writable } from 'node:stream';
import type { Metrics } from '../../observability/metrics.ts';
import type { RequestContext } from '../../pipeline/context.ts';
import { type CallFailure, callUpstream, type ResponseSink } from '../../upstream/call.ts';
import { h2cRequestHeaders } from '../../upstream/h2c-headers.ts';
import type { UpstreamRuntime } from '../../upstream/pools.ts';
import type { BoundHandler } from '../../pipeline/route.ts';
import { ClientSink } from '../client-sink.ts';
import type { ErrorPages } from './manifest.ts';

export function interceptingErrors(
  pages: ErrorPages,
  up: UpstreamRuntime,
  metrics: Metrics,
  inner: BoundHandler,
): BoundHandler {
  const statuses = new Set(pages.statuses);
  const fixed = Object.fromEntries(Object.entries(pages.headers ?? {}).map(([k, v]) => [k.toLowerCase(), v]));
  const wrap = (ctx: RequestContext, sink: ResponseSink, signal: Abortable | undefined) =>
    new ErrorPageSink(sink, statuses, (code) => {
      const headers: Record<string, string> = { ...ctx.headers, ...fixed };
      delete headers['content-length'];
      delete headers['transfer-encoding'];
      headers['x-code'] = String(code);
      headers['x-format'] = ctx.headers.accept ?? '';
      headers['x-original-uri'] = ctx.req.url ?? ctx.path;
      headers['x-request-id'] = ctx.requestId;
      ctx.upstreamAddress = up.origin;
      callUpstream(
        up,
        {
          path: '/',
          method: ctx.method,
          headers: up.h2c ? h2cRequestHeaders(headers, ctx.teTrailers) : headers,
          body: null,
          keyed: false,
          signal,
          span: ctx.span,
          peer: ctx,
        },
        sink,
        metrics,
      );
    });
  return {
    handle: (ctx) => inner.call(ctx, wrap(ctx, new ClientSink(ctx), ctx.signal), ctx.signal),
    call: (ctx, sink, signal) => inner.call(ctx, wrap(ctx, sink, signal), signal),
    // An upgrade is a tunnel, not an answer to replace.
    ...(inner.upgrade && { upgrade: inner.upgrade }),
  };
}

/** Where an upstream's body goes when its answer is replaced: read, dropped. */
const dropping = () =>
  new Writable({
    write(_chunk, _encoding, done) {
      done();
    },
  });

/** Passes the upstream's answer on, unless its status is listed: then the error upstream answers. */
class ErrorPageSink implements ResponseSink {
  readonly #sink: ResponseSink;
  readonly #statuses: ReadonlySet<number>;
  readonly #ask: (code: number) => void;
  /** 0: the answer passed on (or none yet); else the status replaced. */
  #replaced = 0;
  #passed = false;

  constructor(sink: ResponseSink, statuses: ReadonlySet<number>, ask: (code: number) => void) {
    this.#sink = sink;
    this.#statuses = statuses;
    this.#ask = ask;
  }

  response(status: number, headers: Record<string, string | string[]>): Writable {
    if (this.#statuses.has(status)) {
      this.#replaced = status;
      return dropping();
    }
    this.#passed = true;
    return this.#sink.response(status, headers);
  }

  trailers(trailers: Record<string, string | string[]>): void {
    if (this.#passed) this.#sink.trailers?.(trailers);
  }

  end(failure: CallFailure | null): void {
    // Replaced: the error upstream answers, whether or not the dropped body came whole.
    if (this.#replaced !== 0) this.#ask(this.#replaced);
    else if (!this.#passed && failure?.code === 'SLC_ERR_UPSTREAM_NO_ENDPOINTS') this.#ask(503);
    else this.#sink.end(failure);
  }
}
