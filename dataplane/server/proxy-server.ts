/**
 * The public proxy port: a bare node:http server. Our own router (swapped per snapshot) does
 * the matching and the handler writes to the raw response, so a framework would only add cost
 * on every request: measured, fastify's request/reply layer put the proxy at 1.3× the bare
 * node:http + undici floor (bench/run.ts). Bodies are never parsed here: they stream.
 *
 * Strict parsing always: Node's lenient parser is never enabled (ARCHITECTURE §6.1 rule 1), a
 * Host header is required, and what Node's parser refuses gets a 400 problem and a closed
 * connection (431 when the headers are too large, 408 when the request is too slow).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Http2SecureServer } from 'node:http2';
import type { Duplex } from 'node:stream';
import { problem } from '../errors/problem.ts';
import { finishRefused, type Observers } from '../pipeline/finish.ts';
import type { ServedSource } from '../runtime/served.ts';
import { peerOf } from './client-address.ts';
import { createRequestHandler, type IngressOptions, refuse as refuseRequest } from './handle.ts';
import type { InFlight } from './in-flight.ts';
import { createUpgradeHandler, type WebSocketSlots } from './websocket.ts';

export interface ProxyServerOptions extends IngressOptions {
  maxHeaderBytes: number;
  /** Time allowed to receive a whole request (Node's requestTimeout). */
  requestTimeoutMs: number;
  keepAliveTimeoutMs: number;
  /** The process's bound on open WebSockets, shared by its listeners. */
  webSockets: WebSocketSlots;
  /** The process's requests in flight (overload bound, draining), shared by its listeners. */
  inFlight: InFlight;
}

export interface ProxyServer {
  server: Server | Http2SecureServer;
  listen(o: { host: string; port: number }): Promise<void>;
  /**
   * Stops accepting and closes idle connections at once; resolves when every connection has
   * ended (in-flight requests finish, then their connections close: InFlight.drain).
   */
  close(): Promise<void>;
  /** Cuts every connection still open (past the drain timeout). */
  closeAll(): void;
}

const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'TRACE'];
const PROXIED = new Set(METHODS);
const ALLOW = METHODS.join(', ');
/**
 * A shed request's Retry-After: one second, about how long a burst takes to pass, and what a
 * client that retries at once (many do, ignoring it) would wait anyway behind a load balancer.
 */
const RETRY_AFTER_S = '1';
const SHED_DETAIL = {
  max_in_flight: 'the process has --max-in-flight requests in flight',
  adaptive: 'the process is at its adaptive concurrency limit (latency is rising)',
};

export function createProxyServer(
  holder: ServedSource,
  opts: ProxyServerOptions,
  obs: Observers,
): ProxyServer {
  const server = createServer(http1Options(opts), requestListener(holder, opts, obs));
  attachHttp1Handlers(server, holder, opts, obs);
  return {
    server,
    listen: (at) => listenOn(server, at),
    // Node's close() also closes the connections idle now; those in flight close after their response.
    close: () => new Promise((resolve) => server.close(() => resolve())),
    closeAll: () => server.closeAllConnections(),
  };
}

/** The HTTP/1.1 parser's settings, the same on the cleartext and the TLS listener. */
export function http1Options(opts: ProxyServerOptions) {
  return {
    maxHeaderSize: opts.maxHeaderBytes,
    insecureHTTPParser: false,
    requireHostHeader: true,
    // Only WebSocket upgrades are taken over: any other (h2c from `curl --http2`, …) is served
    // as plain HTTP/1.1 through the whole chain, its Upgrade tokens dropped at ingress.
    shouldUpgradeCallback: isWebSocketUpgrade,
    requestTimeout: opts.requestTimeoutMs,
    keepAliveTimeout: opts.keepAliveTimeoutMs,
  };
}

/**
 * Every request of a listener (HTTP/1.x, and h2 on the TLS listener): admitted within the
 * process's in-flight bound (else shed at once), then methods we proxy go to the ingress.
 */
export function requestListener(
  source: ServedSource,
  opts: IngressOptions & { inFlight: InFlight },
  obs: Observers,
) {
  const handle = createRequestHandler(source, opts, obs);
  const inFlight = opts.inFlight;
  return (req: IncomingMessage, res: ServerResponse): void => {
    // While draining, a request on a kept-alive connection is still served, then the connection closes (admit).
    const shed = inFlight.admit(res);
    if (shed !== null) {
      obs.metrics.requestShed(shed);
      refuseRequest(req, res, obs, process.hrtime.bigint(), 'SLC_ERR_OVERLOADED', SHED_DETAIL[shed], false, {
        'retry-after': RETRY_AFTER_S,
      });
      return;
    }
    if (!PROXIED.has(req.method ?? '')) {
      const start = process.hrtime.bigint();
      refuseRequest(
        req,
        res,
        obs,
        start,
        'SLC_ERR_METHOD_NOT_ALLOWED',
        `${req.method} is not proxied`,
        true,
        {
          allow: ALLOW,
        },
      );
      return;
    }
    handle(req, res);
  };
}

/** WebSocket upgrades and what the HTTP/1.1 parser refuses, on either listener. */
export function attachHttp1Handlers(
  server: Server | Http2SecureServer,
  source: ServedSource,
  opts: IngressOptions & { webSockets: WebSocketSlots },
  obs: Observers,
): void {
  server.on('upgrade', createUpgradeHandler(source, opts, obs, opts.webSockets));
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => {
    if (err.code === 'ECONNRESET' || !socket.writable) {
      socket.destroy();
      return;
    }
    const start = process.hrtime.bigint();
    const [status, code] =
      err.code === 'HPE_HEADER_OVERFLOW'
        ? refuse(socket, 431, null, 'Request Header Fields Too Large')
        : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
          ? refuse(socket, 408, null, 'Request Timeout')
          : refuse(
              socket,
              400,
              'SLC_ERR_BAD_REQUEST',
              `the request cannot be parsed (${err.code ?? 'malformed'})`,
            );
    finishRefused(obs, null, status, code ?? `HTTP_${status}`, undefined, start, peerOf(socket));
  });
}

export function listenOn(
  server: Server | Http2SecureServer,
  { host, port }: { host: string; port: number },
): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
}

function isWebSocketUpgrade(req: IncomingMessage): boolean {
  return (req.headers.upgrade ?? '').toLowerCase() === 'websocket';
}

/** Answers on the raw socket (the request could not be read) and closes it. */
function refuse(
  socket: Duplex,
  status: number,
  code: 'SLC_ERR_BAD_REQUEST' | null,
  detail: string,
): [number, string | null] {
  const body = code === null ? '' : JSON.stringify(problem(code, detail));
  const type = code === null ? '' : 'Content-Type: application/problem+json\r\n';
  socket.end(
    `HTTP/1.1 ${status} ${code === null ? detail : 'Bad Request'}\r\n` +
      `${type}Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
  return [status, code];
}
