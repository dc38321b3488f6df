/**
 * What the TLS listener watches on each h2 session: idleness (closed like an idle HTTP/1.1
 * keep-alive connection) and rapid reset (CVE-2023-44487).
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
import { constants, type Http2Session, type ServerHttp2Stream } from 'node:http2';

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

export function watchSession(session: Http2Session, w: SessionWatch): void {
  let open = 0;
  let unanswered = 0;
  let windowStart = 0;
  const onClose = function (this: ServerHttp2Stream) {
    open--;
    if (this.headersSent || session.destroyed) return;
    const now = Date.now();
    if (now - windowStart > RESET_WINDOW_MS) {
      windowStart = now;
      unanswered = 0;
    }
    if (++unanswered <= MAX_UNANSWERED_STREAMS) return;
    w.onFlood(session, unanswered);
    // The GOAWAY first: destroy(…, code) alone sends NO_ERROR.
    session.goaway(constants.NGHTTP2_ENHANCE_YOUR_CALM);
    session.destroy();
  };
  session.on('stream', (stream: ServerHttp2Stream) => {
    open++;
    stream.once('close', onClose);
  });
  closeWhenIdle(session, w.keepAliveTimeoutMs, () => open);
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
