/**
 * A WebSocket (HTTP/1.1 upgrade) tunnel: undici's upgrade on the route's pool, the 101 written
 * back with the headers a client needs, then a byte pipe both ways. Open tunnels belong to their
 * sockets, not to a runtime: a config swap leaves them alone.
 */
import type { Duplex } from 'node:stream';
import { sendProblem } from '../../errors/problem.ts';
import type { RequestContext } from '../../pipeline/context.ts';
import { finishRequest } from '../../pipeline/finish.ts';
import { upstreamErrorCode } from '../../upstream/errors.ts';
import type { UpstreamRuntime } from '../../upstream/pools.ts';

const PASS_BACK = /^(upgrade|connection|sec-websocket-[a-z-]+|set-cookie|x-.+)$/;

export function tunnel(
  ctx: RequestContext,
  up: UpstreamRuntime,
  path: string,
  socket: Duplex,
  head: Buffer,
): void {
  up.pool
    .upgrade({ path, method: 'GET', headers: ctx.headers, protocol: 'websocket' })
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
