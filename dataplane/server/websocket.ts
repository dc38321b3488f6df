/**
 * WebSocket upgrades (the only upgrades the server takes over: proxy-server.ts): the same ingress, route match and chain runner as any request
 * (asynchronous hooks included: a jwt-protected route verifies a fresh token here too), then the
 * route handler's upgrade, which takes the socket over.
 */
import type { IncomingMessage } from 'node:http';
import { ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { answerProblem } from '../pipeline/answer.ts';
import type { Observers } from '../pipeline/finish.ts';
import { runChain } from '../pipeline/run-chain.ts';
import type { RuntimeHolder } from '../runtime/holder.ts';
import { type IngressOptions, ingress } from './handle.ts';

export function createUpgradeHandler(holder: RuntimeHolder, opts: IngressOptions, obs: Observers) {
  return (req: IncomingMessage, socket: Duplex, head: Buffer): void => {
    socket.on('error', () => socket.destroy());
    // A ServerResponse on the raw socket lets refusals go through the one problem renderer.
    const res = new ServerResponse(req);
    res.assignSocket(socket as never);
    res.on('finish', () => socket.destroy());
    const ctx = ingress(req, res, holder, opts, obs);
    if (ctx === null) return;
    if (ctx.route.handler.upgrade === undefined) {
      answerProblem(ctx, 'SLC_ERR_BAD_REQUEST', { detail: 'this route does not take upgrades' });
      return;
    }
    ctx.upgrade = { socket, head };
    runChain(ctx);
  };
}
