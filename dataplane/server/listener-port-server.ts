/**
 * One Gateway listener port: a net server on --host:port that accepts each connection and hands
 * it to the port's protocol now (runtime/listener-port.ts): HTTP to the cleartext server
 * (HTTP/1.1 and h2c, cleartext-server.ts), HTTPS to the proxy's TLS server (secure-server.ts,
 * ALPN h2 and http/1.1) looking certificates up among the port's listeners, and refusing the
 * client certificates the port's validation does not take (tls/client-validation.ts). One socket per port
 * whatever is served on it, so a snapshot that keeps the port keeps it bound, even through a
 * protocol change. In a cluster worker the listen goes through node:cluster, as the proxy port's
 * does: the primary binds, and hands connections to the workers listening on that port.
 *
 * A port that cannot be bound (EADDRINUSE, EACCES, …) is retried, the delay doubling from
 * BIND_RETRY_FIRST_MS up to BIND_RETRY_MAX_MS, until it binds or the port is closed; each
 * outcome is reported (onState) for the log, the metrics and GET /config.
 *
 * Closing (the port left the snapshot, or the process drains): the socket unbinds at once (new
 * connections are refused), h2 sessions get a GOAWAY (open streams finish), an HTTP/1.1
 * connection ends once its response in flight has, WebSockets are closed with 1001; whatever is
 * still open after the drain timeout is cut.
 */
import type { Http2SecureServer } from 'node:http2';
import { createServer as createNetServer, type Server, type Socket } from 'node:net';
import type { Observers } from '../pipeline/finish.ts';
import type { ListenerPort } from '../runtime/listener-port.ts';
import type { ServedSource } from '../runtime/served.ts';
import { GOING_AWAY } from '../handlers/proxy/ws-relay.ts';
import { type CleartextServer, createCleartextServer } from './cleartext-server.ts';
import { drainHttp1 } from './http1-drain.ts';
import type { ProxyServer, ProxyServerOptions } from './proxy-server.ts';
import { createSecureProxyServer } from './secure-server.ts';
import type { TLSSocket } from 'node:tls';
import { refusal } from '../tls/client-validation.ts';
import { TLS_CONTEXT_OPTIONS } from '../tls/settings.ts';

const BIND_RETRY_FIRST_MS = 250;
const BIND_RETRY_MAX_MS = 10_000;

export interface PortState {
  bound: boolean;
  /** The last failed bind ("EADDRINUSE: …"), while the port is not bound. */
  error?: string;
}

export interface PortServerDeps {
  host: string;
  serverOpts: ProxyServerOptions;
  obs: Observers;
  /** The port as the runtime current now has it; null when it has not (being closed). */
  port(): ListenerPort | null;
  /** What a request on the port is served from (a request or a handshake reads it once). */
  source: ServedSource;
  /** Each bind outcome: bound, or a failed attempt (`failures` in a row; a retry follows). */
  onState(state: PortState, failures: number): void;
}

/** The port's TLS server, its connections, and the port (and its default PEM) it last served. */
interface SecurePart {
  proxy: ProxyServer;
  sockets: Set<Socket>;
  port: ListenerPort | null;
  pem: { cert: string; key: string } | null;
}

export class ListenerPortServer {
  readonly port: number;
  state: PortState = { bound: false };
  readonly #deps: PortServerDeps;
  readonly #net: Server;
  /** Every connection accepted: cut past the drain timeout. */
  readonly #sockets = new Set<Socket>();
  #cleartext: CleartextServer | null = null;
  #secure: SecurePart | null = null;
  #failures = 0;
  #retry: NodeJS.Timeout | null = null;
  #closing: Promise<void> | null = null;

  constructor(port: number, deps: PortServerDeps) {
    this.port = port;
    this.#deps = deps;
    // As node:http's and node:https's own servers make theirs: TCP_NODELAY (without it, Nagle's
    // algorithm held a response's later small writes until the client's delayed ACK of the
    // earlier ones, up to 40 ms each, and made the listener ports cost ~10 % more CPU per
    // request than the proxy port: bench/balance.ts gwl), and half-open connections left for the
    // HTTP server to end (a client's FIN after its request does not cut the response).
    this.#net = createNetServer({ noDelay: true, allowHalfOpen: true }, (socket) => this.#accept(socket));
    this.#bind();
  }

  /** Stops accepting, drains (see the file's comment), cuts what is left after drainTimeoutMs; resolves when all ended. */
  close(drainTimeoutMs: number): Promise<void> {
    this.#closing ??= new Promise<void>((resolve) => {
      if (this.#retry !== null) clearTimeout(this.#retry);
      // Resolves once every connection it accepted has closed (at once when it never bound).
      this.#net.close(() => resolve());
      for (const s of this.#sockets) s.emit(GOING_AWAY);
      this.#cleartext?.drain();
      if (this.#secure !== null) {
        for (const s of this.#secure.sockets) s.emit(GOING_AWAY);
        void this.#secure.proxy.close();
        drainHttp1(this.#secure.proxy.server, this.#secure.sockets);
      }
      setTimeout(() => this.closeAll(), drainTimeoutMs).unref();
    });
    return this.#closing;
  }

  /** Cuts every connection still open. */
  closeAll(): void {
    for (const s of this.#sockets) s.destroy();
  }

  #accept(socket: Socket): void {
    socket.on('error', () => socket.destroy());
    this.#sockets.add(socket);
    socket.once('close', () => this.#sockets.delete(socket));
    const port = this.#deps.port();
    if (port?.protocol === 'HTTP') this.#cleartextServer().accept(socket);
    else if (port?.protocol === 'HTTPS') this.#secureServerFor(port).proxy.server.emit('connection', socket);
    else socket.destroy(); // accepted as the port was being dropped
  }

  #cleartextServer(): CleartextServer {
    const d = this.#deps;
    this.#cleartext ??= createCleartextServer(d.source, d.serverOpts, d.obs);
    return this.#cleartext;
  }

  /** The TLS server, its default context (for clients without SNI) the port's now. */
  #secureServerFor(port: ListenerPort): SecurePart {
    const secure = this.#secureServer();
    if (secure.port === port) return secure;
    secure.port = port;
    const pem = port.defaultCertificate;
    if (pem?.cert !== secure.pem?.cert || pem?.key !== secure.pem?.key) {
      secure.pem = pem;
      // Made when the first connection after a change comes, not per handshake; without one
      // (no catch-all listener), a handshake without SNI fails.
      (secure.proxy.server as Http2SecureServer).setSecureContext({ ...TLS_CONTEXT_OPTIONS, ...(pem ?? {}) });
    }
    return secure;
  }

  #secureServer(): SecurePart {
    if (this.#secure === null) {
      const d = this.#deps;
      // No default certificate: a name no listener of the port takes gets no handshake.
      const proxy = createSecureProxyServer(d.source, { ...d.serverOpts, defaultCertificate: null }, d.obs);
      // Node's HTTP/1.1 code checks its connections' timeouts from 'listening' on; the port's
      // own server listens, not this one.
      proxy.server.emit('listening');
      const sockets = new Set<Socket>();
      // Before the h2 or HTTP/1.1 code reads a request: a client certificate the port's
      // validation refuses closes the connection (client-validation.ts).
      proxy.server.prependListener('secureConnection', (s: TLSSocket) => {
        const why = refusal(s, this.#deps.port()?.clientValidation ?? null);
        if (why === null) return;
        d.obs.log.debug({ port: this.port, why }, 'client certificate refused');
        s.destroy();
      });
      proxy.server.on('secureConnection', (s: Socket) => {
        sockets.add(s);
        s.once('close', () => sockets.delete(s));
      });
      this.#secure = { proxy, sockets, port: null, pem: null };
    }
    return this.#secure;
  }

  #bind(): void {
    const onError = (err: NodeJS.ErrnoException) => {
      this.#net.off('listening', onListening);
      if (this.#closing !== null) return;
      this.#failures++;
      this.state = { bound: false, error: `${err.code ?? 'ERROR'}: ${err.message}` };
      this.#deps.onState(this.state, this.#failures);
      const delay = Math.min(BIND_RETRY_MAX_MS, BIND_RETRY_FIRST_MS * 2 ** (this.#failures - 1));
      this.#retry = setTimeout(() => this.#bind(), delay).unref();
    };
    const onListening = () => {
      this.#net.off('error', onError);
      // In a cluster worker the listen completes asynchronously: it may land after close().
      if (this.#closing !== null) {
        this.#net.close();
        return;
      }
      this.state = { bound: true };
      this.#deps.onState(this.state, this.#failures);
      this.#failures = 0;
    };
    this.#net.once('error', onError);
    this.#net.once('listening', onListening);
    this.#net.listen(this.port, this.#deps.host);
  }
}
