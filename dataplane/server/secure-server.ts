/**
 * The TLS listener of the proxy (--https-port): node:http2's secure server with allowHTTP1, so
 * ALPN gives h2 to clients that offer it and HTTP/1.1 to the others, and both reach the same
 * request listener, ingress, routes and plugins as the cleartext port (handle.ts reads h2's
 * pseudo-headers). HTTP/1.1 here runs on Node's HTTP/1 server code with the cleartext port's
 * parser settings (http1Options), WebSocket upgrades included; h2 offers no upgrades (no
 * extended CONNECT), and its CONNECT is refused like any method we do not proxy.
 *
 * Certificates: the SNI callback looks the server name up in the runtime current at the
 * handshake, so a new snapshot is served on new connections while open ones keep the context
 * they were made with. No SNI, or a name no certificate covers: the default certificate
 * (--tls-default-cert/key); without one such a handshake is refused.
 */
import {
  createSecureServer,
  type Http2ServerRequest,
  type Http2ServerResponse,
  type SecureServerOptions,
} from 'node:http2';
import type { Socket } from 'node:net';
import type { SecureContext } from 'node:tls';
import type { Observers } from '../pipeline/finish.ts';
import type { ServedSource } from '../runtime/served.ts';
import { TLS_CONTEXT_OPTIONS } from '../tls/settings.ts';
import { h2ServerOptions, serveSessions } from './h2-sessions.ts';
import {
  attachHttp1Handlers,
  http1Options,
  listenOn,
  type ProxyServer,
  type ProxyServerOptions,
  requestListener,
} from './proxy-server.ts';

export interface SecureProxyOptions extends ProxyServerOptions {
  /** PEM certificate chain and key served when no certificate of the snapshot covers the SNI; null = none. */
  defaultCertificate: { cert: string; key: string } | null;
}

export function createSecureProxyServer(
  /** The holder (the proxy's TLS port), or a Gateway listener port's view of it (listener-ports.ts). */
  holder: ServedSource,
  opts: SecureProxyOptions,
  obs: Observers,
): ProxyServer {
  const ingress = { ...opts, proto: 'https' as const };
  // The compatibility request and response stand in for node:http's: what the pipeline uses of
  // them (headers, rawHeaders, socket, writeHead, write, end, destroy) they have.
  const onRequest = requestListener(holder, ingress, obs) as unknown as (
    req: Http2ServerRequest,
    res: Http2ServerResponse,
  ) => void;
  const server = createSecureServer(listenerOptions(holder, opts), onRequest);
  // Client certificates: node:tls reads the server's requestCert for each new connection, so
  // it follows the snapshot current at the handshake: asked for while a route carries a plugin
  // that reads one (mtls-auth), never required (rejectUnauthorized false: that plugin answers
  // with a problem, and routes without it on this listener are served as before). No `ca` is
  // given: each plugin verifies the chain against its own CA bundle, so routes with different
  // CAs share the listener. Per listener, not per SNI: Node sets the verify mode before the
  // SNI callback runs and offers no hook to change it per server name.
  Object.defineProperty(server, 'requestCert', {
    get: () => holder.current?.requestsClientCertificate === true,
  });
  attachHttp1Handlers(server, holder, ingress, obs);
  // Handshakes that fail (a scanner, an unknown name without a default) are the client's problem: debug only.
  server.on('tlsClientError', (err) => obs.log.debug({ err: err.message }, 'TLS handshake failed'));

  // What close() and closeAll() have to end: h2 sessions (a GOAWAY lets their open streams
  // finish) and HTTP/1.1 connections (Node's HTTP/1 code closes them when idle).
  const sessions = serveSessions(server, opts.keepAliveTimeoutMs, obs);
  const sockets = new Set<Socket>();
  server.on('secureConnection', (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  return {
    server,
    listen: (at) => listenOn(server, at),
    close: () => {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      sessions.close();
      // Present with allowHTTP1 (Node's HTTP/1 server code), missing from the type.
      (server as unknown as { closeIdleConnections(): void }).closeIdleConnections();
      return closed;
    },
    closeAll: () => {
      sessions.destroy();
      for (const socket of sockets) socket.destroy();
    },
  };
}

/**
 * The listener's TLS and h2 options (client certificates: see `requestCert` above).
 */
function listenerOptions(holder: ServedSource, opts: SecureProxyOptions): SecureServerOptions {
  return {
    ...http1Options(opts),
    ...TLS_CONTEXT_OPTIONS,
    ...(opts.defaultCertificate ?? {}),
    ...(h2ServerOptions(opts.maxHeaderBytes) as SecureServerOptions),
    allowHTTP1: true,
    // TCP_NODELAY, as node:http and node:https set it and node:http2 does not: Nagle's algorithm
    // held small writes (an h2 frame, a response's later chunk) while earlier ones were unacknowledged.
    noDelay: true,
    rejectUnauthorized: false,
    SNICallback: (servername: string, cb: (err: Error | null, ctx?: SecureContext) => void) => {
      const context = holder.current?.certificates.lookup(servername);
      if (context !== undefined) cb(null, context);
      else if (opts.defaultCertificate !== null)
        cb(null, undefined); // the server's own: the default
      else cb(new Error(`no certificate for ${servername} and no default certificate`));
    },
  };
}
