/**
 * A Gateway HTTP listener port's protocols: HTTP/1.1 and HTTP/2 with prior knowledge (h2c, what
 * gRPC clients without TLS speak) on one port. node:http2's cleartext server does not take
 * HTTP/1.1 (allowHTTP1 is for ALPN, on TLS), so the first bytes of each connection pick the
 * server: the HTTP/2 connection preface ("PRI * HTTP/2.0…") goes to an h2 server, anything else
 * to an HTTP/1.1 server, neither listening itself (the port's own server, listener-port-server.ts,
 * accepts and hands the sockets over). Both run the same request pipeline as the proxy port, with
 * the same limits: the HTTP/1.1 parser's (http1Options, WebSocket upgrades included) and the TLS
 * listener's h2 settings and session watch (h2-sessions.ts).
 */
import { createServer as createHttp1Server } from 'node:http';
import {
  createServer as createH2cServer,
  type Http2ServerRequest,
  type Http2ServerResponse,
} from 'node:http2';
import type { Socket } from 'node:net';
import type { Observers } from '../pipeline/finish.ts';
import type { ServedSource } from '../runtime/served.ts';
import { h2ServerOptions, serveSessions } from './h2-sessions.ts';
import { drainHttp1 } from './http1-drain.ts';
import {
  attachHttp1Handlers,
  http1Options,
  type ProxyServerOptions,
  requestListener,
} from './proxy-server.ts';

const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n');

/**
 * A connection that has not sent enough to tell its protocol within this is cut: the bound
 * Node's HTTP/1.1 server puts on receiving a request's headers (its headersTimeout default).
 */
const SNIFF_TIMEOUT_MS = 60_000;

function cut(this: Socket): void {
  this.destroy();
}

export interface CleartextServer {
  /** Serves a connection the port accepted: h2c when it opens with the HTTP/2 preface, else HTTP/1.1. */
  accept(socket: Socket): void;
  /** Draining: h2 sessions get a GOAWAY, HTTP/1.1 connections end once their response in flight has. */
  drain(): void;
}

export function createCleartextServer(
  source: ServedSource,
  opts: ProxyServerOptions,
  obs: Observers,
): CleartextServer {
  const onRequest = requestListener(source, opts, obs);
  const http1 = createHttp1Server(http1Options(opts), onRequest);
  attachHttp1Handlers(http1, source, opts, obs);
  // Node's HTTP/1.1 server starts checking its connections' request and header timeouts when it
  // starts listening; this one never does itself, so it is told (else a slow client is never cut).
  http1.emit('listening');
  // The compatibility request and response stand in for node:http's (as on the TLS listener).
  const h2c = createH2cServer(
    h2ServerOptions(opts.maxHeaderBytes),
    onRequest as unknown as (req: Http2ServerRequest, res: Http2ServerResponse) => void,
  );
  const sessions = serveSessions(h2c, opts.keepAliveTimeoutMs, obs);
  const http1Sockets = new Set<Socket>();

  const hand = (socket: Socket, head: Buffer, h2: boolean) => {
    socket.setTimeout(0);
    socket.off('timeout', cut);
    // The h2 session reads what is buffered with socket.read() on its next tick: paused, the
    // bytes wait for it (flowing, they would be emitted to no listener). The HTTP/1.1 server
    // takes them from 'data' events, so that socket keeps flowing.
    if (h2) socket.pause();
    socket.unshift(head);
    if (h2) {
      h2c.emit('connection', socket);
      return;
    }
    http1Sockets.add(socket);
    socket.once('close', () => http1Sockets.delete(socket));
    http1.emit('connection', socket);
  };

  return {
    accept(socket) {
      // Its first bytes decide; the port's server (listener-port-server.ts) handles its errors.
      let head: Buffer | null = null;
      const sniff = (chunk: Buffer) => {
        head = head === null ? chunk : Buffer.concat([head, chunk]);
        const n = Math.min(head.length, PREFACE.length);
        const h2 = head.subarray(0, n).equals(PREFACE.subarray(0, n));
        if (h2 && head.length < PREFACE.length) return; // a prefix of the preface so far
        socket.off('data', sniff);
        hand(socket, head, h2);
      };
      socket.on('data', sniff);
      socket.setTimeout(SNIFF_TIMEOUT_MS);
      socket.once('timeout', cut);
    },
    drain() {
      sessions.close();
      drainHttp1(http1, http1Sockets);
      // Its connection checks (the interval 'listening' started) end with it.
      http1.close();
    },
  };
}
