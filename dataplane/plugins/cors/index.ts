/**
 * cors: a preflight (OPTIONS with Origin and Access-Control-Request-Method) is answered here, in
 * the first phase, before any authentication: 204 (or 200, preflightStatus) with the Access-Control-Allow-* headers, or a
 * 403 problem without them (the browser then blocks the request); it never reaches the upstream.
 * A plain OPTIONS is not a preflight and goes on through the chain.
 *
 * Every other request gets its CORS headers set on the response now, before anything else runs
 * (res.setHeader): Node merges them into whatever writes the response head later (the upstream's
 * response, a 401 from jwt, a 429, a problem, an idempotency replay), so the browser can read the
 * gateway's own answers too, and the pipeline needs no second path for them. On the upstream's
 * response, the response hook merges Origin into its Vary (its own Vary would replace ours) and
 * drops its Access-Control-* headers: the gateway's policy answers, whatever the upstream says.
 * Headers set this way never enter an idempotency record (it stores the upstream's headers), so
 * a replay carries the CORS headers of the request it answers.
 *
 * The price, on CORS routes only: once a header is set on the response, Node's writeHead passes
 * each header of the upstream's response through setHeader (validation) too, about 2-3 µs per
 * request in a microbenchmark against ~0.6 µs for writing the same headers straight into the
 * upstream's header object, which would not reach the gateway's own answers. Routes without
 * cors pay nothing.
 */
import { handshakeOrigins } from '../../config/origins.ts';
import { answered, answerProblem } from '../../pipeline/answer.ts';
import type { RequestContext } from '../../pipeline/context.ts';
import { definePlugin } from '../types.ts';
import { manifest } from './manifest.ts';
import { ACTUAL_VARY, compilePolicy, mergeVary, UPSTREAM_CORS_HEADERS } from './policy.ts';

export default definePlugin(manifest, {
  create(config) {
    const policy = compilePolicy(config);
    const { credentials, expose } = policy;
    const preflightStatus = config.preflightStatus ?? 204;

    const preflight = (ctx: RequestContext, origin: string, method: string): void => {
      const h = ctx.headers;
      const answer = policy.preflight(
        origin,
        method,
        h['access-control-request-headers'],
        h['access-control-request-private-network'] === 'true',
      );
      if (!answer.allowed) {
        answerProblem(ctx, 'SLC_ERR_CORS_REFUSED', { detail: answer.reason, headers: { vary: answer.vary } });
        return;
      }
      answered(ctx);
      ctx.res.writeHead(preflightStatus, {
        ...answer.headers,
        ...(preflightStatus === 200 && { 'content-length': '0' }),
        'x-request-id': ctx.requestId,
      });
      ctx.res.end();
    };

    const hooks = {
      onRequest(ctx: RequestContext): void {
        // A WebSocket handshake carries this site's cookies whatever page opens it: only the
        // policy's origins may (cross-site WebSocket hijacking); clients without Origin are no browsers.
        if (ctx.upgrade !== null)
          for (const o of handshakeOrigins(ctx.headers, ctx.repeatedHeaders))
            if (policy.allowOrigin(o) === null) {
              answerProblem(ctx, 'SLC_ERR_WEBSOCKET_ORIGIN_REFUSED', {
                detail: `the origin ${JSON.stringify(o)} is not among this route's cors origins`,
                close: true,
              });
              return;
            }
        // An Origin sent on two lines was joined at ingress ("a, b"): it is no origin, never allowed.
        const repeated = ctx.repeatedHeaders;
        const origin = repeated?.has('origin') ? 'null' : ctx.headers.origin;
        if (origin !== undefined && ctx.method === 'OPTIONS') {
          const method = ctx.headers['access-control-request-method'];
          if (method !== undefined) {
            preflight(ctx, origin, method);
            return;
          }
        }
        const res = ctx.res;
        res.setHeader('vary', ACTUAL_VARY);
        if (origin === undefined) return;
        const allowed = policy.allowOrigin(origin);
        if (allowed === null) return;
        res.setHeader('access-control-allow-origin', allowed);
        if (credentials) res.setHeader('access-control-allow-credentials', 'true');
        if (expose !== null) res.setHeader('access-control-expose-headers', expose);
      },
      onResponse(_ctx: RequestContext, headers: Record<string, string | string[]>): void {
        for (const name of UPSTREAM_CORS_HEADERS) if (headers[name] !== undefined) delete headers[name];
        headers.vary = mergeVary(headers.vary);
      },
    };
    return { bind: () => hooks };
  },
});
