/**
 * The one upstream call every handler makes (ARCHITECTURE §8.11): the upstream's endpoint for
 * each try (pools.ts; a retry prefers another), the connect / header / body timeouts, the
 * request deadline, the retry policy and its budget, the circuit breaker and the upstream
 * metrics. Retries live here rather than in an undici
 * interceptor because they must see the method, whether the body can be sent again and whether
 * an idempotency key protects the request, and must stop before any byte reaches the client.
 * Where the response goes is the caller's: a ResponseSink (the client, or a buffer for an
 * asynchronous operation).
 */
import type { Abortable } from './abortable.ts';
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import type { Readable, Writable } from 'node:stream';
import type { Dispatcher } from 'undici';
import type { ErrorCode } from '../errors/codes.ts';
import type { Metrics } from '../observability/metrics.ts';
import { endAttemptSpan, type Span, startAttemptSpan } from '../observability/tracing.ts';
import { readBody } from './body.ts';
import { mayHaveReachedUpstream, SendTimeoutError, upstreamErrorCode } from './errors.ts';
import { endToEndHeaders } from './response-headers.ts';
import type { Endpoint, UpstreamRuntime } from './pools.ts';
import { SendWatch } from './send-timeout.ts';
import { UpstreamTry } from './try.ts';

export type Body = Buffer | Readable | IncomingMessage | null;

export interface UpstreamRequest {
  path: string;
  method: string;
  headers: Record<string, string>;
  body: Body;
  /** An idempotency key protects the request: a POST or PATCH may be retried when no try was sent. */
  keyed: boolean;
  /**
   * The caller no longer wants the answer (the client went away: RequestContext.signal; an
   * aggregate call past its time, or its aggregate answered): a try still queued in the pool or
   * waiting to be retried is never sent, one under way is cut and its connection freed.
   */
  signal?: Abortable;
  /** The request's server span (tracing on): each try is a child span, and the upstream gets its traceparent. */
  span?: Span | null;
  /** Where each try's address is noted (the request's context: the access log's `upstream`). */
  peer?: { upstreamAddress: string | null };
}

export interface CallFailure {
  code: ErrorCode;
  /** Some try may have reached the upstream (an idempotency record then stays in progress). */
  sent: boolean;
}

/** Where a call's response goes. */
export interface ResponseSink {
  /** The response to deliver (no retry follows), its end-to-end headers only: returns where its body goes. */
  response(status: number, headers: Record<string, string | string[]>): Writable;
  /**
   * The response's trailers (end-to-end ones only), just before its body ends; a sink without
   * this drops them. Comes only after `response`.
   */
  trailers?(trailers: Record<string, string | string[]>): void;
  /** The call is over: null once the body was delivered whole, else the gateway's error. */
  end(failure: CallFailure | null): void;
}

interface Tries {
  /** Retries done so far. */
  attempt: number;
  /** Date.now() past which no try starts (0: none). */
  deadline: number;
  /** Whether an earlier try may have reached the upstream. */
  sent: boolean;
  /** The endpoint of the try before: a retry goes elsewhere where there is elsewhere. */
  last: Endpoint | null;
}

interface Call {
  up: UpstreamRuntime;
  req: UpstreamRequest;
  sink: ResponseSink;
  metrics: Metrics;
}

/**
 * Bodies of known length up to these sizes are read whole before the first try, as nginx's
 * proxy_request_buffering (on by default) reads every body; larger ones, and chunked ones,
 * stream. A body read whole can be sent again by a retry (the larger bound, on retrying upstreams;
 * a streamed one is not retried), goes out with the request's head in one write, and is not sent
 * until the client has sent all of it, so a client slow to send its body holds no upstream
 * connection meanwhile. Measured (bench/README.md, "A small request body read first"): a plain
 * POST of 111 bytes took 35.2 → 33.6 µs of CPU at full load (medians of 4 rounds; undici's stream
 * writer, its listeners and the extra turns of the event loop are what it saves), and the
 * scavenges that promote a whole request's objects at the start of a load went 45–62 → 28–29.
 * The smaller bound, on every upstream, is about what a streamed body holds in memory anyway (a
 * request stream's buffer is 16 KiB).
 */
const READ_FIRST_BYTES = 16 * 1024;
const REPLAYABLE_BYTES = 64 * 1024;

const IDEMPOTENT = new Set(['GET', 'HEAD', 'OPTIONS', 'PUT', 'DELETE', 'TRACE']);

export function callUpstream(
  up: UpstreamRuntime,
  req: UpstreamRequest,
  sink: ResponseSink,
  metrics: Metrics,
) {
  const call: Call = { up, req, sink, metrics };
  let tries: Tries | null = null;
  // Optimization: an upstream without retries, breaker or deadline takes the plain path (no Tries).
  if (up.retry !== null || up.breaker !== null || up.requestMs !== 0) {
    up.retry?.budget.request();
    tries = {
      attempt: 0,
      deadline: up.requestMs ? Date.now() + up.requestMs : 0,
      sent: false,
      last: null,
    };
  }
  const body = req.body;
  if (body !== null && !Buffer.isBuffer(body)) {
    const max = up.retry === null ? READ_FIRST_BYTES : REPLAYABLE_BYTES;
    const length = Number(req.headers['content-length'] ?? -1);
    if (length >= 0 && length <= max) {
      readBody(body, max).then(
        (buffer) => dispatch(call, buffer, tries),
        (err) => sink.end({ code: upstreamErrorCode(err), sent: false }),
      );
      return;
    }
  }
  dispatch(call, body, tries);
}

function dispatch(call: Call, body: Body, tries: Tries | null) {
  const { up, req, sink } = call;
  if (req.signal?.aborted)
    return sink.end({ code: upstreamErrorCode(req.signal.reason), sent: tries?.sent ?? false });
  // Before the breaker: a half-open breaker's probe is not spent on a request that cannot go.
  const endpoint = up.pick(req.headers, tries === null ? null : tries.last);
  if (endpoint === null)
    return sink.end({ code: 'SLC_ERR_UPSTREAM_NO_ENDPOINTS', sent: tries?.sent ?? false });
  if (up.breaker !== null && !up.breaker.allow())
    return sink.end({ code: 'SLC_ERR_UPSTREAM_CIRCUIT_OPEN', sent: tries?.sent ?? false });
  let headersTimeout = up.retry?.perTryMs ?? up.headersTimeout;
  if (tries !== null && tries.deadline !== 0) {
    const left = tries.deadline - Date.now();
    if (left <= 0) return sink.end({ code: 'SLC_ERR_UPSTREAM_TIMEOUT', sent: tries.sent });
    headersTimeout = Math.min(headersTimeout, left);
  }
  if (req.peer !== undefined) req.peer.upstreamAddress = endpoint.address;
  const attempt = new Attempt(call, body, tries, headersTimeout, endpoint);
  endpoint.inFlight++;
  endpoint.dispatcher.dispatch(
    { path: req.path, method: req.method as Dispatcher.HttpMethod, headers: req.headers, body },
    attempt,
  );
}

/** One try (its undici handler is UpstreamTry): a response to deliver, a status to retry, or an error. */
class Attempt extends UpstreamTry {
  readonly #call: Call;
  readonly #body: Body;
  readonly #tries: Tries | null;
  readonly #endpoint: Endpoint;
  readonly #start = process.hrtime.bigint();
  readonly #span: Span | null;
  #status = 0;
  /** A status to retry came: its body is dropped, then the next try goes. */
  #retryStatus = false;
  /** While a streamed body is being sent, on upstreams with a send timeout. */
  #send: SendWatch | null = null;

  constructor(call: Call, body: Body, tries: Tries | null, headersTimeout: number, endpoint: Endpoint) {
    const { up, req } = call;
    super(headersTimeout, up.bodyTimeout, req.signal);
    this.#call = call;
    this.#body = body;
    this.#tries = tries;
    this.#endpoint = endpoint;
    this.#span =
      req.span == null
        ? null
        : startAttemptSpan(
            req.span,
            req.method,
            up.origin,
            req.path,
            tries?.attempt ?? 0,
            req.headers,
            endpoint,
          );
  }

  override onRequestStart(controller: Dispatcher.DispatchController): void {
    super.onRequestStart(controller);
    const ms = this.#call.up.sendTimeout ?? 0;
    const body = this.#body;
    if (ms > 0 && body !== null && !Buffer.isBuffer(body) && !controller.aborted)
      this.#send = new SendWatch(body, ms, () => controller.abort(new SendTimeoutError()));
  }

  /** undici's: the body went whole. */
  onRequestSent(): void {
    this.#stopSending();
  }

  #stopSending(): void {
    if (this.#send === null) return;
    this.#send.stop();
    this.#send = null;
  }

  protected head(status: number, headers: IncomingHttpHeaders): Writable | null {
    // The upstream answered: from here its read timeouts apply, not the send timeout.
    this.#stopSending();
    const call = this.#call;
    const up = call.up;
    const tries = this.#tries;
    this.#status = status;
    up.breaker?.record(status < 500);
    up.outcome(this.#endpoint, status < 500);
    // A retryable status is read and dropped; the client sees only the last try.
    if (tries !== null && status >= 500 && retryAllowed(call, this.#body, tries, true, status)) {
      this.#retryStatus = true;
      return null;
    }
    call.metrics.upstreamLatency(up.id, this.#start);
    return call.sink.response(status, endToEndHeaders(headers));
  }

  protected trailers(trailers: IncomingHttpHeaders): void {
    this.#call.sink.trailers?.(endToEndHeaders(trailers));
  }

  protected settled(err: Error | null, responded: boolean): void {
    this.#stopSending();
    const call = this.#call;
    const body = this.#body;
    const tries = this.#tries;
    const last = this.#endpoint;
    last.inFlight--;
    if (this.#span !== null) endAttemptSpan(this.#span, this.#status, err);
    if (this.#retryStatus) retryLater(call, body, { ...tries!, sent: true, last }, 'status');
    else if (err === null) call.sink.end(null);
    else if (call.req.signal?.aborted)
      // Withdrawn (the client went away): neither the upstream's failure nor a try to repeat.
      call.sink.end({ code: upstreamErrorCode(call.req.signal.reason), sent: true });
    else {
      if (!responded) {
        call.up.breaker?.record(false);
        call.up.outcome(last, false);
      }
      const sent = mayHaveReachedUpstream(err);
      if (tries !== null && !responded && retryAllowed(call, body, tries, sent, 0))
        retryLater(call, body, { ...tries, sent: tries.sent || sent, last }, sent ? 'reset' : 'connect');
      else call.sink.end({ code: upstreamErrorCode(err), sent: sent || responded || (tries?.sent ?? false) });
    }
  }
}

/**
 * Whether another try may go: tries left, a body that can be sent again (none, or read
 * already), the method (idempotent; POST/PATCH only under an idempotency key when nothing was
 * sent, or when the backend declares itself idempotent), then the budget.
 */
function retryAllowed(call: Call, body: Body, tries: Tries, sent: boolean, status: number): boolean {
  const r = call.up.retry;
  if (r === null || tries.attempt >= r.attempts) return false;
  if (status !== 0 && !r.statuses.includes(status)) return false;
  if (body !== null && !Buffer.isBuffer(body)) return false;
  const safe = IDEMPOTENT.has(call.req.method) || r.idempotentBackend || (!sent && call.req.keyed);
  if (!safe) return false;
  if (r.budget.take()) return true;
  call.metrics.retry(call.up.id, 'budget_exhausted');
  return false;
}

function retryLater(call: Call, body: Body, tries: Tries, reason: string): void {
  const r = call.up.retry!;
  call.metrics.retry(call.up.id, reason);
  // Exponential backoff with full jitter.
  const wait = Math.random() * Math.min(r.backoffMaxMs, r.backoffBaseMs * 2 ** tries.attempt);
  setTimeout(() => dispatch(call, body, { ...tries, attempt: tries.attempt + 1 }), wait);
}
