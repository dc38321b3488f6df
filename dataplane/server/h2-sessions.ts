/**
 * What every h2 server of the data plane (the TLS listener, and a Gateway listener port's h2c
 * and TLS) applies: its settings (h2ServerOptions), and on each session (serveSessions) a watch
 * for idleness (closed like an idle HTTP/1.1 keep-alive connection) and rapid reset
 * (CVE-2023-44487), and a GOAWAY when the server closes.
 *
 * Rapid reset: a client opens streams and resets them at once, each costing the gateway a
 * route lookup and an upstream request while costing the client one frame; the bound on
 * concurrent streams does not stop it, since a reset stream no longer counts. So, as nginx,
 * Envoy (premature resets) and Node's own nghttp2 limit do, each session counts the streams that
 * closed before the server answered them (reset by the client, or opened faster than they are
 * answered and cut), in a fixed window; past the bound the session gets GOAWAY with
 * ENHANCE_YOUR_CALM and is closed, its streams with it (their upstream requests are cancelled
 * through the requests' signals). A metric and one log line per session cut.
 */
import {
  constants,
  type Http2SecureServer,
  type Http2Server,
  type Http2Session,
  type ServerHttp2Stream,
  type ServerOptions,
} from 'node:http2';
import type { Observers } from '../pipeline/finish.ts';
import { H2_MAX_CONCURRENT_STREAMS, H2_MAX_SESSION_MEMORY_MB } from '../tls/settings.ts';
import { peerOf } from './client-address.ts';
import { CountingResponse } from './h2-response.ts';

/**
 * Streams closed unanswered a session may have within RESET_WINDOW_MS. A browser cancels some
 * tens of streams when a page is left; 400 in 10 s on one connection is no page's pattern,
 * while the attack tools reset thousands a second. (Node's nghttp2 bound, a burst of 1,000 then
 * 33/s, comes later on this pattern and without a metric.)
 */
export const MAX_UNANSWERED_STREAMS = 400;
export const RESET_WINDOW_MS = 10_000;

export interface SessionWatch {
  /** Idle time (no open stream) after which the session is closed. */
  keepAliveTimeoutMs: number;
  /** The session is cut for rapid reset: `unanswered` streams within the window. */
  onFlood(session: Http2Session, unanswered: number): void;
}

/** How long a cut session's connection lingers, its incoming frames read and dropped, for the client to hang up. */
export const CUT_LINGER_MS = 2_000;

export function watchSession(session: Http2Session, w: SessionWatch): void {
  const open = new Set<ServerHttp2Stream>();
  let unanswered = 0;
  let windowStart = 0;
  let cut = false;
  const onClose = function (this: ServerHttp2Stream) {
    open.delete(this);
    if (this.headersSent || session.destroyed || cut) return;
    const now = Date.now();
    if (now - windowStart > RESET_WINDOW_MS) {
      windowStart = now;
      unanswered = 0;
    }
    if (++unanswered <= MAX_UNANSWERED_STREAMS) return;
    cut = true;
    w.onFlood(session, unanswered);
    cutSession(session, open);
  };
  session.on('stream', (stream: ServerHttp2Stream) => {
    // After the cut no stream is served (nghttp2 drops those past the GOAWAY's last stream id).
    if (cut) return void stream.close(constants.NGHTTP2_REFUSED_STREAM);
    open.add(stream);
    stream.once('close', onClose);
  });
  closeWhenIdle(session, w.keepAliveTimeoutMs, () => open.size);
}

/**
 * GOAWAY ENHANCE_YOUR_CALM, the open streams cancelled (their upstream requests with them), and
 * the connection closed once the client has hung up, or after CUT_LINGER_MS.
 *
 * Why not destroy at once: closing a socket with unread bytes in it (the flood still arriving)
 * sends a TCP reset, and the client's kernel then drops what the client had not read yet, the
 * GOAWAY among it: a client whose process was busy saw only ECONNRESET. So, like nginx's
 * lingering close, the session keeps reading (and dropping) what comes until the client goes.
 */
function cutSession(session: Http2Session, open: Set<ServerHttp2Stream>): void {
  session.goaway(constants.NGHTTP2_ENHANCE_YOUR_CALM);
  for (const stream of open) stream.close(constants.NGHTTP2_CANCEL);
  const linger = setTimeout(() => session.destroy(), CUT_LINGER_MS);
  linger.unref();
  session.once('close', () => clearTimeout(linger));
}

/**
 * An h2 session without an open stream for `ms` is closed (GOAWAY), like an idle HTTP/1.1
 * keep-alive connection. Not the server's own timeout: that destroys a session on `ms` of
 * silence even while a stream waits for a slow upstream, taking its other streams with it.
 * (Node's session timer fires once per quiet period, so it is re-armed while streams are open.)
 */
function closeWhenIdle(session: Http2Session, ms: number, open: () => number): void {
  session.setTimeout(ms);
  session.on('timeout', () => {
    if (open() === 0) session.close();
    else session.setTimeout(ms);
  });
}

/** The h2 options of a server: its SETTINGS, its memory bound, and the response that counts body bytes. */
export function h2ServerOptions(maxHeaderBytes: number): ServerOptions {
  return {
    // Counts each h2 response's body bytes (for bytesOut): the session's socket is shared.
    // (Node's typing wants a class generic in its request type; the one request type is used.)
    Http2ServerResponse: CountingResponse as unknown as ServerOptions['Http2ServerResponse'],
    settings: {
      maxConcurrentStreams: H2_MAX_CONCURRENT_STREAMS,
      // The h2 form of --max-header-bytes: HPACK-decoded names and values (+32 bytes each, RFC 9113).
      maxHeaderListSize: maxHeaderBytes,
    },
    maxSessionMemory: H2_MAX_SESSION_MEMORY_MB,
  };
}

/** A server's h2 sessions, for its close: a GOAWAY to each (open streams finish), or a cut. */
export interface Sessions {
  /** GOAWAY to every session, and to each that starts from now on. */
  close(): void;
  /** Cuts every session (past the drain timeout). */
  destroy(): void;
}

/** Watches each session of the server (watchSession, with the metric and log of a cut) and keeps them for close. */
export function serveSessions(
  server: Http2Server | Http2SecureServer,
  keepAliveTimeoutMs: number,
  obs: Observers,
): Sessions {
  const sessions = new Set<Http2Session>();
  let closing = false;
  server.on('session', (s: Http2Session) => {
    sessions.add(s);
    s.once('close', () => sessions.delete(s));
    if (closing) s.close();
    watchSession(s, {
      keepAliveTimeoutMs,
      onFlood: (session, unanswered) => {
        obs.metrics.http2SessionCut('rapid_reset');
        obs.log.warn(
          { client: peerOf(session.socket), unanswered, windowMs: RESET_WINDOW_MS },
          'h2 connection cut: too many streams reset or left unanswered (rapid reset); GOAWAY ENHANCE_YOUR_CALM',
        );
      },
    });
  });
  return {
    close: () => {
      closing = true;
      for (const s of sessions) s.close();
    },
    destroy: () => {
      for (const s of sessions) s.destroy();
    },
  };
}
