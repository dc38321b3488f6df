/**
 * The entry of every proxied request: one reading of the target and the headers, one route
 * lookup on the runtime current at arrival, then the route's chain. Errors found here are the
 * gateway's own and never reach an upstream.
 */
import { randomUUID } from '../observability/uuid.ts';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Http2ServerRequest } from 'node:http2';
import type { BlockList } from 'node:net';
import type { ErrorCode } from '../errors/codes.ts';
import { sendProblem } from '../errors/problem.ts';
import { RequestContext } from '../pipeline/context.ts';
import { bytesWritten, finishRefused, type Observers } from '../pipeline/finish.ts';
import { runChain } from '../pipeline/run-chain.ts';
import { safeTarget } from '../observability/access-log.ts';
import { type Span, startServerSpan } from '../observability/tracing.ts';
import type { Served, ServedSource } from '../runtime/served.ts';
import { clientAddress, isTrusted, peerOf, plainAddress } from './client-address.ts';
import { h2HeaderLines, readIngressHeaders, setForwardingHeaders } from './ingress-headers.ts';
import { REQUEST_ID } from '../config/http-grammar.ts';
import { normalizeTarget } from '../config/path-grammar.ts';

export interface IngressOptions {
  /** Peers whose X-Forwarded-* / Forwarded headers are kept and extended; null = none. */
  trustedProxies: BlockList | null;
  maxBodyBytes: number;
  proto: 'http' | 'https';
}

/** Reads a request up to a matched route; on failure answers with a problem and returns null. */
export function ingress(
  req: IncomingMessage,
  res: ServerResponse,
  source: ServedSource,
  opts: IngressOptions,
  obs: Observers,
): RequestContext | null {
  const startNs = process.hrtime.bigint();
  // HTTP/1.0 and 1.1, and h2 on the TLS listener (node:http2's compatibility request: its
  // pseudo-headers are read below): llhttp also reads HTTP/0.9 and other versions, which peers
  // could read differently.
  const h2 =
    req.httpVersionMajor === 2 && (req as unknown as Partial<Http2ServerRequest>).stream !== undefined;
  if (!h2 && (req.httpVersionMajor !== 1 || req.httpVersionMinor > 1))
    return refuse(
      req,
      res,
      obs,
      startNs,
      'SLC_ERR_BAD_REQUEST',
      `HTTP version ${req.httpVersion} is not accepted`,
      true,
    );
  const rt = source.current;
  if (rt === null) return refuse(req, res, obs, startNs, 'SLC_ERR_NOT_READY');
  const target = normalizeTarget(req.url ?? '');
  if ('error' in target) return refuse(req, res, obs, startNs, 'SLC_ERR_BAD_PATH', target.error);
  const peer = req.socket.remoteAddress ?? '';
  const trusted = opts.trustedProxies !== null && isTrusted(opts.trustedProxies, peer);
  const ing = readIngressHeaders(h2 ? h2HeaderLines(req.rawHeaders) : req, trusted);
  if ('error' in ing) return refuse(req, res, obs, startNs, 'SLC_ERR_BAD_HEADER', ing.error, true);
  // h2 has no Transfer-Encoding: a body is whatever DATA frames follow headers without END_STREAM.
  if (h2) ing.hasBody = !(req as unknown as Http2ServerRequest).stream.endAfterHeaders;
  if (ing.transferEncoding && req.httpVersionMinor === 0)
    return refuse(
      req,
      res,
      obs,
      startNs,
      'SLC_ERR_BAD_REQUEST',
      'Transfer-Encoding is not allowed in HTTP/1.0',
      true,
    );
  const method = req.method as string;
  const cl = ing.headers['content-length'];
  if (cl !== undefined && Number(cl) > opts.maxBodyBytes)
    return refuse(
      req,
      res,
      obs,
      startNs,
      'SLC_ERR_BODY_TOO_LARGE',
      `the limit is ${opts.maxBodyBytes} bytes`,
      true,
    );
  let route = rt.matcher.match(target.path, method, ing.host, ing.headers, target.query);
  // A browser's CORS preflight is an OPTIONS about the method it will send: a route that lists
  // its methods without OPTIONS still gets it when it carries cors, whose first phase answers it
  // (nothing is proxied). Only unmatched OPTIONS requests pay for the second lookup.
  if (route === null && method === 'OPTIONS') route = preflightRoute(rt, target, ing);
  if (route === null) return refuse(req, res, obs, startNs, 'SLC_ERR_ROUTE_NOT_FOUND');
  // The route's own limit, when lower (a plugin's): still before anything of the route runs.
  if (cl !== undefined && Number(cl) > route.maxBodyBytes)
    return refuse(
      req,
      res,
      obs,
      startNs,
      'SLC_ERR_BODY_TOO_LARGE',
      `the limit is ${route.maxBodyBytes} bytes`,
      true,
    );
  const given = ing.headers['x-request-id'];
  const requestId = given !== undefined && REQUEST_ID.test(given) ? given : randomUUID();
  ing.headers['x-request-id'] = requestId;
  // Read before the gateway extends X-Forwarded-For with the peer.
  const client = trusted ? clientAddress(peer, opts.trustedProxies!, ing.headers) : plainAddress(peer);
  setForwardingHeaders(ing.headers, peer, opts.proto, ing.rawHost);
  const ctx = new RequestContext(req, res, route, target.path, target.query, ing.headers, requestId, startNs);
  ctx.clientAddress = client;
  if (obs.accessLog || obs.metrics.consumers !== null) ctx.bytesOutAtStart = bytesWritten(req);
  // Optimization: tracing is decided once per process (null when OTEL_* does not configure it).
  if (obs.tracing != null) {
    ctx.span = startServerSpan(obs.tracing, ing.headers, method, route.id, target.path, client);
    ctx.traceId = ctx.span.spanContext().traceId;
  }
  ctx.repeatedHeaders = ing.repeated;
  ctx.hasBody = ing.hasBody;
  ctx.chunked = ing.hasBody && cl === undefined;
  ctx.teTrailers = ing.teTrailers;
  return ctx;
}

/**
 * Answers a request the ingress refuses (no route yet): the problem, one log line, one metric
 * sample, and with tracing on a server span whose trace id the problem and the line carry.
 * (A plain function, not a closure made per request: ingress is on every request's path.)
 */
export function refuse(
  req: IncomingMessage,
  res: ServerResponse,
  obs: Observers,
  startNs: bigint,
  code: ErrorCode,
  detail?: string,
  close = false,
  headers?: Record<string, string>,
): null {
  const requestId = randomUUID();
  const client = peerOf(req.socket);
  const span = refusedSpan(obs, req, client);
  const traceId = span === null ? null : span.spanContext().traceId;
  sendProblem(res, code, { detail, requestId, traceId, close, headers });
  finishRefused(obs, req, res.statusCode, code, requestId, startNs, client, span);
  return null;
}

export function createRequestHandler(source: ServedSource, opts: IngressOptions, obs: Observers) {
  return (req: IncomingMessage, res: ServerResponse): void => {
    const ctx = ingress(req, res, source, opts, obs);
    if (ctx !== null) runChain(ctx);
  };
}

function preflightRoute(
  rt: Served,
  target: { path: string; query: string },
  ing: { host: string; headers: Record<string, string> },
) {
  const asked = ing.headers['access-control-request-method'];
  if (asked === undefined || ing.headers.origin === undefined) return null;
  const r = rt.matcher.match(target.path, asked, ing.host, ing.headers, target.query);
  return r?.answersPreflight ? r : null;
}

/** The server span of a refused request (tracing on), joining the client's trace as any request does. */
function refusedSpan(obs: Observers, req: IncomingMessage, client: string | undefined): Span | null {
  if (obs.tracing == null) return null;
  return startServerSpan(
    obs.tracing,
    req.headers,
    req.method ?? '',
    null,
    safeTarget(req.url) ?? '',
    client ?? '',
  );
}
