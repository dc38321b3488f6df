/**
 * WebSocket upgrades (the only upgrades the server takes over: proxy-server.ts): the same ingress, route match and chain runner as any request
 * (asynchronous hooks included: a jwt-protected route verifies a fresh token here too), then the
 * route handler's upgrade, which takes the socket over. Past the process's bound on open
 * WebSockets (WebSocketSlots) the upgrade gets a 503 problem before the chain runs; a handshake
 * from a page of an origin the route's websocket.allowedOrigins does not list gets a 403 (the
 * cors plugin checks its own origins the same way, in the chain): a browser sends this site's
 * cookies whatever page opens the socket, so without the check any site could open one as its
 * visitor (cross-site WebSocket hijacking).
 */
import type { IncomingMessage } from 'node:http';
import { ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { compileOrigins, handshakeOrigins, type OriginRule } from '../config/origins.ts';
import { answerProblem } from '../pipeline/answer.ts';
import type { RequestContext } from '../pipeline/context.ts';
import type { Observers } from '../pipeline/finish.ts';
import { runChain } from '../pipeline/run-chain.ts';
import type { ServedSource } from '../runtime/served.ts';
import { GOING_AWAY } from '../handlers/proxy/ws-relay.ts';
import { type IngressOptions, ingress } from './handle.ts';

/**
 * The bound on a process's WebSockets (--max-websockets), shared by its cleartext and TLS
 * listeners. A slot is taken when an upgrade has a route and held until the client's socket
 * closes, so handshakes in progress count too and a burst cannot overshoot the bound.
 */
export class WebSocketSlots {
  readonly max: number;
  #taken = 0;
  /** The client sockets holding a slot: told to go away when the process drains. */
  readonly #sockets = new Set<Duplex>();

  constructor(max: number) {
    this.max = max;
  }

  get taken(): number {
    return this.#taken;
  }

  /** Takes a slot until `socket` closes; false when none is free. */
  take(socket: Duplex): boolean {
    if (this.#taken >= this.max) return false;
    this.#taken++;
    this.#sockets.add(socket);
    socket.once('close', () => {
      this.#taken--;
      this.#sockets.delete(socket);
    });
    return true;
  }

  /** Draining: every open WebSocket is ended with 1001 (going away) on both sides (ws-relay.ts). */
  goingAway(): void {
    for (const socket of this.#sockets) socket.emit(GOING_AWAY);
  }
}

export function createUpgradeHandler(
  source: ServedSource,
  opts: IngressOptions,
  obs: Observers,
  slots: WebSocketSlots,
) {
  return (req: IncomingMessage, socket: Duplex, head: Buffer): void => {
    socket.on('error', () => socket.destroy());
    // A ServerResponse on the raw socket lets refusals go through the one problem renderer.
    const res = new ServerResponse(req);
    res.assignSocket(socket as never);
    res.on('finish', () => socket.destroy());
    const ctx = ingress(req, res, source, opts, obs);
    if (ctx === null) return;
    if (ctx.route.handler.upgrade === undefined) {
      answerProblem(ctx, 'SLC_ERR_BAD_REQUEST', { detail: 'this route does not take upgrades' });
      return;
    }
    const metrics = ctx.route.deps.metrics;
    if (!slots.take(socket)) {
      metrics.websocketConnection(ctx.route.id, 'limit');
      answerProblem(ctx, 'SLC_ERR_WEBSOCKET_LIMIT', { close: true });
      return;
    }
    ctx.upgrade = { socket, head };
    // Answered by the chain (a 401, a 429, …): the handler, which clears ctx.upgrade, was never reached.
    res.on('finish', () => {
      if (ctx.upgrade !== null) metrics.websocketConnection(ctx.route.id, 'refused');
    });
    const refused = refusedOrigin(ctx);
    if (refused !== null) {
      answerProblem(ctx, 'SLC_ERR_WEBSOCKET_ORIGIN_REFUSED', {
        detail: `the origin ${JSON.stringify(refused)} is not in this route's websocket.allowedOrigins`,
        close: true,
      });
      return;
    }
    runChain(ctx);
  };
}

/** Each route entry's allowedOrigins, compiled once (a retired table's entries take theirs with them). */
const compiled = new WeakMap<readonly string[], OriginRule>();

/** The first origin of the handshake the route's allowedOrigins does not allow, or null. */
function refusedOrigin(ctx: RequestContext): string | null {
  const list = ctx.route.entry.websocket?.allowedOrigins;
  if (list === undefined) return null;
  let rule = compiled.get(list);
  if (rule === undefined) {
    rule = compileOrigins(list);
    compiled.set(list, rule);
  }
  for (const origin of handshakeOrigins(ctx.headers, ctx.repeatedHeaders))
    if (!rule.allows(origin)) return origin;
  return null;
}
