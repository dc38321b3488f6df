/** The state of one request as it moves through the chain. One object per request, plain fields. */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex, Writable } from 'node:stream';
import type { Span } from '../observability/tracing.ts';
import { ClientSignal } from './client-signal.ts';
import type { RuntimeRoute } from './route.ts';
import type { SlotHolder } from './slot.ts';

/** Who is calling: set by the authenticate phase (later issues), read by rate limits and idempotency. */
export interface Consumer {
  id: string;
  credentialId?: string;
  source: string;
  /** The verified token's claims, when the credential has them (jwt): templates read them without knowing jwt. */
  claims?: Readonly<Record<string, unknown>>;
}

export class RequestContext implements SlotHolder {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly route: RuntimeRoute;
  readonly method: string;
  /** Normalized path: the one matched and forwarded (before stripPrefix). */
  readonly path: string;
  /** Raw query string without "?". */
  query: string;
  /** The path sent upstream in place of the (stripped) request path, when a transformer rewrote it; the base path is still prepended. */
  upstreamPath: string | null = null;
  /** Upstream request headers, lower-case names; plugins edit this object. */
  readonly headers: Record<string, string>;
  readonly requestId: string;
  readonly startNs: bigint;
  consumer: Consumer | null = null;
  /** The client's address: the peer, or behind trusted proxies the first untrusted forwarded hop (server/client-address.ts). */
  clientAddress = '';
  /** Header names the client sent on more than one line (their values are joined in headers); null when none. */
  repeatedHeaders: ReadonlySet<string> | null = null;
  /** Set by a hook that has answered the request itself: the chain stops. */
  done = false;
  /** Upstream status, for logs and metrics. */
  status = 0;
  /** Whether the request has a body, and whether it is chunked (no Content-Length to check up front). */
  hasBody = false;
  chunked = false;
  /** The client's TE named "trailers" (server/ingress-headers.ts): it takes response trailers. */
  teTrailers = false;
  /** The whole request body, read once when something on the route needs it (RuntimeRoute.bodyAt): the upstream gets these bytes. */
  body: Buffer | null = null;
  /** Headers plugins add to the response (RateLimit, …); the handler writes them. */
  responseHeaders: Record<string, string> | null = null;
  /** What sees the response body on its way to the client, in the order added (cache, idempotency, transformers). */
  taps: ResponseTap[] | null = null;
  /** An Idempotency-Key protects this request (the record is claimed): a POST may be retried if it never left. */
  keyed = false;
  /** An HTTP/1.1 upgrade (WebSocket): the client's socket and the bytes read past the head. */
  upgrade: { socket: Duplex; head: Buffer } | null = null;
  /** finishRequest has run (one log line and one metric sample per request, whatever happens after). */
  finished = false;
  /** The plugins' per-request state (slot.ts: each plugin's Slot is an index here); null until one is set. */
  slots: unknown[] | null = null;
  /** The origin the handler called ("http://host:port"), for the access log; null: none (answered by the gateway). */
  upstreamAddress: string | null = null;
  /** When the upstream call started and when its response headers came (0: not yet), access log only. */
  upstreamStartNs = 0n;
  upstreamHeadersNs = 0n;
  /** The connection's bytes written when the request arrived (access log on, HTTP/1): bytesOut is the difference. */
  bytesOutAtStart = 0;
  /** The request's server span (tracing on; observability/tracing.ts), parent of its upstream, store and call spans. */
  span: Span | null = null;
  /** The W3C trace id of the request's server span, for logs and problem bodies; null when tracing is off. */
  traceId: string | null = null;
  /** Made on first use (client-signal.ts): only handlers that call an upstream for the client pay for it. */
  #signal: ClientSignal | null = null;

  constructor(
    req: IncomingMessage,
    res: ServerResponse,
    route: RuntimeRoute,
    path: string,
    query: string,
    headers: Record<string, string>,
    requestId: string,
    startNs: bigint,
  ) {
    this.req = req;
    this.res = res;
    this.route = route;
    this.method = req.method as string;
    this.path = path;
    this.query = query;
    this.headers = headers;
    this.requestId = requestId;
    this.startNs = startNs;
  }

  /**
   * Aborted when the client goes away before its response ended: every upstream call made for
   * the client carries it (a background call, which outlives the client, does not). None for an
   * execution under an Idempotency-Key (keyed): it runs to its end, its response stored for the
   * client's retry, and is never left half done.
   */
  get signal(): ClientSignal | undefined {
    if (this.keyed) return undefined;
    if (this.#signal === null) this.#signal = new ClientSignal(this.res);
    return this.#signal;
  }

  addTap(tap: ResponseTap): void {
    if (this.taps === null) this.taps = [tap];
    else this.taps.push(tap);
  }
}

/**
 * What a request hook that waits returns: the chain runner calls `then` once, and goes on when
 * `resume` is called (or answers a 500 on `fail`). A promise is one; rate-limiting's waiting hit
 * (plugins/rate-limiting/waiting-hit.ts) is another, without a promise.
 */
export interface Resumable {
  then(resume: () => void, fail: (err: unknown) => void): unknown;
}

/** A request hook; returns a Resumable (a promise, mostly) only when it really waits. */
export type RequestHook = (ctx: RequestContext) => void | Promise<void> | Resumable;
/** A response hook edits the upstream's response headers before they are written. */
export type ResponseHook = (ctx: RequestContext, headers: Record<string, string | string[]>) => void;

/**
 * Sees a response on its way to the client. Taps are chained: the last one added receives the
 * upstream's bytes first and passes them on towards the client (a response transformer, added
 * late, changes the body before idempotency or a cache, added earlier, store it). Headers are
 * final when start runs (response hooks edit them); a tap that only observes does not change
 * them. A tap that replaces the body says so (`rewritesBody`): the client's head is then written
 * only when the first body byte (or the end) reaches it, so until then that tap may change the
 * headers it was given (Content-Length), and taps added earlier see them changed when the body
 * reaches them.
 */
export interface ResponseTap {
  /** May replace the body and change headers before passing the body on (response-transformer). */
  readonly rewritesBody?: boolean;
  /** Status and headers as written to the client; returns where the body goes (it must pass it on to next, and end it). */
  start(status: number, headers: Record<string, string | string[]>, next: Writable): Writable;
  /** The upstream call failed, before or after the response started; `sent`: it may have reached the upstream. */
  fail(sent: boolean): void;
}
