/**
 * concurrency-limiting: each request of a client takes one of its `perClient` places until its
 * response is done (the response's close: finished, or the client gone; a WebSocket's when its
 * socket closes); a request finding none free is answered 429 SLC_ERR_RATE_LIMITED, as
 * rate-limiting answers, and never reaches the upstream. The counts belong to the plugin instance
 * (every route carrying the GatewayPlugin shares them) and to this process; a new snapshot
 * starts from zero while requests of the old one finish (briefly up to twice the limit).
 */
import { answerProblem } from '../../pipeline/answer.ts';
import type { RequestContext } from '../../pipeline/context.ts';
import { definePlugin } from '../types.ts';
import { manifest } from './manifest.ts';

export default definePlugin(manifest, {
  create(config) {
    const limit = config.perClient;
    const inProgress = new Map<string, number>();
    const release = (client: string) => {
      const n = inProgress.get(client)! - 1;
      if (n === 0) inProgress.delete(client);
      else inProgress.set(client, n);
    };
    const hooks = {
      onRequest(ctx: RequestContext): void {
        const client = ctx.clientAddress;
        const n = inProgress.get(client) ?? 0;
        if (n >= limit) {
          answerProblem(ctx, 'SLC_ERR_RATE_LIMITED', {
            detail: `${limit} request${limit === 1 ? '' : 's'} of this client ${limit === 1 ? 'is' : 'are'} in progress on this route`,
          });
          return;
        }
        inProgress.set(client, n + 1);
        ctx.res.once('close', () => release(client));
      },
    };
    return { bind: () => hooks };
  },
});
