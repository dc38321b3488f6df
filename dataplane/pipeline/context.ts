/** The state of one request as it moves through the chain. One object per request, plain fields. */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Writable } from 'node:stream';
import type { RuntimeRoute } from '../runtime/runtime-route.ts';

/** Who is calling: set by the authenticate phase (later issues), read by rate limits and idempotency. */
export interface Consumer {
  id: string;
  credentialId?: string;
  source: string;
}

export class RequestContext {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly route: RuntimeRoute;
  readonly method: string;
  /** Normalized path: the one matched and forwarded (before stripPrefix). */
  readonly path: string;
  /** Raw query string without "?". */
  query: string;
  /** Upstream request headers, lower-case names; plugins edit this object. */
  readonly headers: Record<string, string>;
  readonly requestId: string;
  readonly startNs: bigint;
  consumer: Consumer | null = null;
  /** Set by a hook that has answered the request itself: the chain stops. */
  done = false;
  /** Upstream status, for logs and metrics. */
  status = 0;
  /** Whether the request has a body, and whether it is chunked (no Content-Length to check up front). */
  hasBody = false;
  chunked = false;
  /** The request body, when a plugin had to read it first (idempotency fingerprint): the upstream gets these bytes. */
  body: Buffer | null = null;
  /** Headers plugins add to the response (RateLimit, …); the upstream phase writes them. */
  responseHeaders: Record<string, string> | null = null;
  /** Set by a plugin that must see the response as it goes to the client (idempotency records it). */
  tap: ResponseTap | null = null;

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
}

/** A request hook; returns a promise only when it really waits. */
export type RequestHook = (ctx: RequestContext) => void | Promise<void>;
/** A response hook edits the upstream's response headers before they are written. */
export type ResponseHook = (ctx: RequestContext, headers: Record<string, string | string[]>) => void;

/** Sees an upstream response on its way to the client. */
export interface ResponseTap {
  /** Status and headers as written to the client; returns where the body goes (it must pass it on to res). */
  start(status: number, headers: Record<string, string | string[]>, res: ServerResponse): Writable;
  /** The upstream call failed, before or after the response started; `sent`: it may have reached the upstream. */
  fail(sent: boolean): void;
}
