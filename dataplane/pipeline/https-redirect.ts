/**
 * A route's `httpsRedirect`: on the cleartext listener the request is answered 308 with the same
 * host, path and query over https (308 keeps the method and body); on the TLS listener the hook
 * lets the request through. It is a built-in step (runtime/builtin-steps.ts) of the first phase,
 * 'redirect': only routes that ask for a redirect pay for the check, and nothing (not even
 * authentication) runs before it on cleartext.
 */
import type { TLSSocket } from 'node:tls';
import { hostName } from '../config/host-name.ts';
import { answered } from './answer.ts';
import type { RequestContext, RequestHook } from './context.ts';

/** `port`: the HTTPS port clients reach (443 is left out of the Location). */
export function httpsRedirectHook(port: number): RequestHook {
  const portPart = port === 443 ? '' : `:${port}`;
  return (ctx: RequestContext) => {
    if ((ctx.req.socket as TLSSocket).encrypted) return;
    const host = hostName(ctx.req.headers.host ?? '');
    const location = `https://${host}${portPart}${ctx.path}${ctx.query ? `?${ctx.query}` : ''}`;
    answered(ctx);
    ctx.status = 308;
    ctx.res.writeHead(308, { location, 'content-length': '0', 'x-request-id': ctx.requestId });
    ctx.res.end();
  };
}
