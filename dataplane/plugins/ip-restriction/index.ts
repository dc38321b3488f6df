/**
 * ip-restriction: a request from an address the config refuses (manifest.ts) is answered 403
 * problem+json (SLC_ERR_ADDRESS_REFUSED) in the access phase, before any credentials are asked
 * for; it never reaches the upstream. The lists are compiled once per snapshot into BlockLists.
 */
import { cidrList, inCidrList } from '../../config/cidr.ts';
import { answerProblem } from '../../pipeline/answer.ts';
import type { RequestContext } from '../../pipeline/context.ts';
import { definePlugin } from '../types.ts';
import { manifest } from './manifest.ts';

export default definePlugin(manifest, {
  create(config) {
    const allow = config.allow ? cidrList(config.allow) : null;
    const deny = config.deny ? cidrList(config.deny) : null;
    const hooks = {
      onRequest(ctx: RequestContext): void {
        const client = ctx.clientAddress;
        if ((deny !== null && inCidrList(deny, client)) || (allow !== null && !inCidrList(allow, client)))
          answerProblem(ctx, 'SLC_ERR_ADDRESS_REFUSED', {
            detail: `the client address ${client} may not use this route`,
          });
      },
    };
    return { bind: () => hooks };
  },
});
