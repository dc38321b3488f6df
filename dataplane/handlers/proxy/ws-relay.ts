/**
 * One open WebSocket after its 101: the bytes relayed both ways as they arrive, each direction
 * read by a FrameReader (ws-frames.ts) for the message-size limit and the message counts, the
 * idle timeout, and how it ended (sluice_websocket_closed_total's reason).
 *
 * Why frames are read in the relay rather than the WebSocket terminated at the gateway (the `ws`
 * library on both sides): terminating would decode, unmask, re-mask and re-encode every message,
 * inflate and deflate compressed ones, and buffer each message whole; reading headers keeps the
 * chunks flowing untouched (the relay forwards the Buffers it is given) and costs a few
 * comparisons per chunk. What the gateway writes itself is only a Close frame, and only on a
 * frame boundary of the direction it goes into (otherwise that side is cut).
 *
 * The relay belongs to its two sockets, not to a runtime: a config swap leaves it alone.
 */
import { randomBytes } from 'node:crypto';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Metrics, WebSocketCloseReason } from '../../observability/metrics.ts';
import type { WebSocketLimits } from '../../pipeline/route.ts';
import {
  CLOSE_BAD_GATEWAY,
  CLOSE_GOING_AWAY,
  CLOSE_PROTOCOL_ERROR,
  CLOSE_TOO_BIG,
  closeFrame,
  FrameReader,
} from './ws-frames.ts';

/**
 * The event the data plane emits on every open WebSocket's client socket when it drains
 * (server/websocket.ts): the relay ends both sides with 1001 (going away), so an open WebSocket
 * does not hold the process until the drain timeout.
 */
export const GOING_AWAY = Symbol('sluice.websocket.goingAway');

/** After the gateway ends a WebSocket, time the peers get to answer the Close and hang up before both sockets are cut. */
const CLOSE_GRACE_MS = 2_000;

/** `client`: node:http hands an upgrade a net.Socket (a tls.TLSSocket on the TLS listener), typed as a Duplex. */
export function relay(
  client: Socket,
  upstream: Duplex,
  head: Buffer,
  limits: WebSocketLimits,
  metrics: Metrics,
  route: string,
): void {
  const counts = metrics.websocketOpened(route);
  const fromClient = new FrameReader(limits.maxMessageBytes, () => counts.toUpstream.inc());
  const fromUpstream = new FrameReader(limits.maxMessageBytes, () => counts.toClient.inc());
  let ended = false;

  /** Ends both sides once: a Close frame with `code` to a side (null: none, it is gone or closed cleanly), then FIN. */
  const end = (reason: WebSocketCloseReason, toClient: number | null, toUpstream: number | null) => {
    if (ended) return;
    ended = true;
    metrics.websocketClosed(route, reason);
    if (limits.idleTimeoutMs > 0) client.setTimeout(0);
    endSide(client, fromUpstream, toClient, undefined);
    endSide(upstream, fromClient, toUpstream, randomBytes(4));
    // Whatever still arrives is read and dropped, so that each peer's own Close and FIN get through.
    client.resume();
    upstream.resume();
    setTimeout(() => {
      client.destroy();
      upstream.destroy();
    }, CLOSE_GRACE_MS).unref();
  };

  const forward = (from: Duplex, to: Duplex, reader: FrameReader, fromClientSide: boolean) => {
    const onData = (chunk: Buffer) => {
      if (ended) return;
      const stop = reader.feed(chunk);
      if (stop < 0) {
        if (!to.write(chunk)) from.pause();
        return;
      }
      if (stop > 0) to.write(chunk.subarray(0, stop));
      if (reader.violation === 'too_big') end('too_big', CLOSE_TOO_BIG, CLOSE_TOO_BIG);
      else if (fromClientSide) end('client_error', CLOSE_PROTOCOL_ERROR, CLOSE_GOING_AWAY);
      else end('upstream_error', CLOSE_BAD_GATEWAY, CLOSE_PROTOCOL_ERROR);
    };
    to.on('drain', () => from.resume());
    return onData;
  };
  const onClientData = forward(client, upstream, fromClient, true);
  const onUpstreamData = forward(upstream, client, fromUpstream, false);

  /** A side hung up (FIN or close): after a Close frame that is the normal end; before one, that side failed. */
  const gone = (side: 'client' | 'upstream') => () => {
    if (fromClient.closeSeen || fromUpstream.closeSeen) end('normal', null, null);
    else if (side === 'client') end('client_error', null, CLOSE_GOING_AWAY);
    else end('upstream_error', CLOSE_BAD_GATEWAY, null);
  };

  upstream.on('error', () => upstream.destroy());
  (client as NodeJS.EventEmitter).once(GOING_AWAY, () => end('shutdown', CLOSE_GOING_AWAY, CLOSE_GOING_AWAY));
  client.on('end', gone('client'));
  client.on('close', gone('client'));
  upstream.on('end', gone('upstream'));
  upstream.on('close', gone('upstream'));
  if (limits.idleTimeoutMs > 0) {
    // The client's socket sees every frame, both ways (read from it, written to it): Node resets
    // its timeout on both, so one timer covers the connection. Pings and pongs are frames too.
    client.setTimeout(limits.idleTimeoutMs, () => end('idle', CLOSE_GOING_AWAY, CLOSE_GOING_AWAY));
  }
  if (head.length) onClientData(head);
  client.on('data', onClientData);
  upstream.on('data', onUpstreamData);
  // Either socket may have been paused by its previous owner (the HTTP server, undici).
  client.resume();
  upstream.resume();
}

/** Writes the Close frame only where the bytes forwarded so far end on a frame boundary; otherwise cuts the side. */
function endSide(
  socket: Duplex,
  towards: FrameReader,
  code: number | null,
  maskKey: Buffer | undefined,
): void {
  if (socket.destroyed || socket.writableEnded) return;
  if (code === null) socket.end();
  else if (towards.atBoundary) socket.end(closeFrame(code, maskKey));
  else socket.destroy();
}
