/**
 * WebSocket (and other HTTP/1.1 upgrade) proxying: the same ingress and route match as any
 * request, the route's request hooks, then undici's upgrade on the route's pool and a byte
 * pipe both ways. Open tunnels belong to their sockets, not to a runtime: a config swap
 * leaves them alone.
 */
import type { IncomingMessage } from 'node:http';
import { ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { sendProblem } from '../errors/problem.ts';
import type { Metrics } from '../observability/metrics.ts';
import type { RequestContext } from '../pipeline/context.ts';
import type { RuntimeHolder } from '../runtime/holder.ts';
import { upstreamErrorCode } from '../upstream/errors.ts';
import { upstreamPath } from '../upstream/proxy.ts';
import { finishRequest } from './finish.ts';
import { type IngressOptions, ingress } from './handle.ts';

const PASS_BACK = /^(upgrade|connection|sec-websocket-[a-z-]+|set-cookie|x-.+)$/;

export function createUpgradeHandler(holder: RuntimeHolder, opts: IngressOptions, metrics: Metrics) {
  return (req: IncomingMessage, socket: Duplex, head: Buffer): void => {
    socket.on('error', () => socket.destroy());
    // A ServerResponse on the raw socket lets refusals go through the one problem renderer.
    const res = new ServerResponse(req);
    res.assignSocket(socket as never);
    res.on('finish', () => socket.destroy());
    if ((req.headers.upgrade ?? '').toLowerCase() !== 'websocket') {
      sendProblem(res, 'SLC_ERR_BAD_REQUEST', { detail: 'only WebSocket upgrades are proxied' });
      return;
    }
    const ctx = ingress(req, res, holder, opts, metrics);
    if (ctx === null) return;
    const hooks = ctx.route.requestHooks;
    if (hooks !== null) {
      for (const h of hooks) {
        if (h(ctx) !== undefined || ctx.done) {
          // Asynchronous hooks (auth with remote keys, …) come with later plugins; refuse rather than skip them.
          if (!ctx.done) sendProblem(res, 'SLC_ERR_INTERNAL', { requestId: ctx.requestId });
          return;
        }
      }
    }
    tunnel(ctx, socket, head);
  };
}

function tunnel(ctx: RequestContext, socket: Duplex, head: Buffer): void {
  const up = ctx.route.upstream;
  up.pool
    .upgrade({ path: upstreamPath(ctx), method: 'GET', headers: ctx.headers, protocol: 'websocket' })
    .then(({ headers, socket: upstream }) => {
      let reply = 'HTTP/1.1 101 Switching Protocols\r\n';
      for (const [name, value] of Object.entries(headers)) {
        if (!PASS_BACK.test(name)) continue;
        for (const v of Array.isArray(value) ? value : [value]) reply += `${name}: ${v}\r\n`;
      }
      socket.write(`${reply}x-request-id: ${ctx.requestId}\r\n\r\n`);
      ctx.res.statusCode = 101;
      finishRequest(ctx, null);
      if (head.length) upstream.write(head);
      upstream.on('error', () => socket.destroy());
      socket.on('close', () => upstream.destroy());
      upstream.on('close', () => socket.destroy());
      upstream.pipe(socket);
      socket.pipe(upstream);
    })
    .catch((err) => {
      sendProblem(ctx.res, upstreamErrorCode(err), { requestId: ctx.requestId });
      finishRequest(ctx, upstreamErrorCode(err));
    });
}
