/**
 * A WebSocket (HTTP/1.1 upgrade) tunnel: undici's upgrade on the pool of one of the upstream's
 * endpoints (counted in flight for as long as the tunnel is open), the 101 written
 * back with the headers a client needs, then the relay (ws-relay.ts: frames read for the
 * message-size limit, the idle timeout and the metrics). Open tunnels belong to their sockets,
 * not to a runtime: a config swap leaves them alone.
 */
import type { Socket } from 'node:net';
import type { Dispatcher } from 'undici';
import type { Duplex } from 'node:stream';
import { sendProblem } from '../../errors/problem.ts';
import type { RequestContext } from '../../pipeline/context.ts';
import { finishRequest } from '../../pipeline/finish.ts';
import type { WebSocketLimits } from '../../pipeline/route.ts';
import { upstreamErrorCode } from '../../upstream/errors.ts';
import type { UpstreamRuntime } from '../../upstream/pools.ts';
import { relay } from './ws-relay.ts';

const PASS_BACK = /^(upgrade|connection|sec-websocket-[a-z-]+|set-cookie|x-.+)$/;
/** Bytes a client may send before the upstream's 101 (a client should send none); past them it is cut. */
const EARLY_BYTES = 64 * 1024;
/** A runtime built without data-plane limits (tests, benchmarks): no idle timeout, no size limit. */
const UNLIMITED: WebSocketLimits = { idleTimeoutMs: 0, maxMessageBytes: 0 };

/** The route's own limits (GatewayRoute routes[].websocket), each in place of the data plane's. */
function limitsOf(ctx: RequestContext, dataPlane: WebSocketLimits | undefined): WebSocketLimits {
  const own = ctx.route.entry.websocket;
  const base = dataPlane ?? UNLIMITED;
  if (own === undefined) return base;
  return {
    idleTimeoutMs: own.idleTimeoutMs ?? base.idleTimeoutMs,
    maxMessageBytes: own.maxMessageBytes ?? base.maxMessageBytes,
  };
}

export function tunnel(
  ctx: RequestContext,
  up: UpstreamRuntime,
  path: string,
  socket: Duplex,
  head: Buffer,
): void {
  const { metrics, limits } = ctx.route.deps;
  // The handler answers from here on (101 or an upstream problem): the server no longer counts this upgrade as refused.
  ctx.upgrade = null;
  const endpoint = up.pick(ctx.headers, null);
  if (endpoint === null) {
    metrics.websocketConnection(ctx.route.id, 'upstream_error');
    sendProblem(ctx.res, 'SLC_ERR_UPSTREAM_NO_ENDPOINTS', { requestId: ctx.requestId });
    finishRequest(ctx, 'SLC_ERR_UPSTREAM_NO_ENDPOINTS');
    return;
  }
  ctx.upstreamAddress = endpoint.address;
  // The client's socket is read during the upstream's handshake: a client that hangs up then
  // (a FIN: the server's sockets allow half-open, and a paused socket never reports it) is
  // seen, its socket closed, and the request's signal cuts the handshake. What it sends early
  // (frames before the 101) is kept for the relay, within a bound.
  const early: Buffer[] = [];
  let earlyBytes = head.length;
  const onEarly = (chunk: Buffer) => {
    earlyBytes += chunk.length;
    if (earlyBytes > EARLY_BYTES) socket.destroy();
    else early.push(chunk);
  };
  const hungUp = () => socket.destroy();
  socket.on('data', onEarly);
  socket.once('end', hungUp);
  socket.resume();
  endpoint.inFlight++;
  endpoint.pool
    .upgrade({
      path,
      method: 'GET',
      headers: ctx.headers,
      protocol: 'websocket',
      // The pool's own timeouts are off (upstream/deadlines.ts keeps those of proxied requests);
      // undici takes this one from the options of any request, an upgrade's too.
      headersTimeout: up.headersTimeout,
      // The client gone during the upstream's handshake: the handshake is cut (and its connection freed).
      signal: ctx.signal?.asAbortSignal(),
    } as Dispatcher.UpgradeOptions)
    .then(
      ({ headers, socket: upstream }) => {
        upstream.once('close', () => endpoint.inFlight--);
        socket.off('data', onEarly);
        socket.off('end', hungUp);
        socket.pause(); // the relay reads on
        if (socket.destroyed) {
          // The client left during the upstream handshake.
          upstream.destroy();
          return;
        }
        let reply = 'HTTP/1.1 101 Switching Protocols\r\n';
        for (const [name, value] of Object.entries(headers)) {
          if (!PASS_BACK.test(name)) continue;
          for (const v of Array.isArray(value) ? value : [value]) reply += `${name}: ${v}\r\n`;
        }
        socket.write(`${reply}x-request-id: ${ctx.requestId}\r\n\r\n`);
        ctx.res.statusCode = 101;
        finishRequest(ctx, null);
        metrics.websocketConnection(ctx.route.id, 'accepted');
        const first = early.length ? Buffer.concat([head, ...early]) : head;
        relay(socket as Socket, upstream, first, limitsOf(ctx, limits.websocket), metrics, ctx.route.id);
      },
      (err) => {
        endpoint.inFlight--;
        if (ctx.signal?.aborted) {
          ctx.res.statusCode = 499;
          finishRequest(ctx, 'SLC_ERR_CLIENT_CLOSED');
          return;
        }
        metrics.websocketConnection(ctx.route.id, 'upstream_error');
        sendProblem(ctx.res, upstreamErrorCode(err), { requestId: ctx.requestId });
        finishRequest(ctx, upstreamErrorCode(err));
      },
    );
}
