/**
 * proxy: the request streams to the route's upstream and the response streams back, both
 * ways without buffering unless something on the route read the body first. WebSocket
 * upgrades are tunnelled to the same upstream. A route with a canary (a version's weighted
 * backends) picks one of its two upstreams per request (canary.ts), each with its own pool and breaker.
 */
import type { RequestContext } from '../../pipeline/context.ts';
import { limitedStream } from '../../upstream/body.ts';
import { type Body, callUpstream, type ResponseSink } from '../../upstream/call.ts';
import { upstreamPath } from '../../upstream/path.ts';
import type { UpstreamRuntime } from '../../upstream/pools.ts';
import { canaryChooser } from './canary.ts';
import { ClientSink } from '../client-sink.ts';
import { defineHandler } from '../types.ts';
import { manifest } from './manifest.ts';
import { tunnel } from './tunnel.ts';

export default defineHandler(manifest, {
  create(deps) {
    return {
      bind(_route, entry, stripLength) {
        const main = deps.upstream(entry.upstream);
        // Without a canary the choice is a constant: routes without versions pay nothing per request.
        let upstreamOf = (_ctx: RequestContext): UpstreamRuntime => main;
        if (entry.canary) {
          const canary = deps.upstream(entry.canary.upstream);
          const toCanary = canaryChooser(entry.canary);
          upstreamOf = (ctx) => (toCanary(ctx) ? canary : main);
        }
        const path = (ctx: RequestContext, up: UpstreamRuntime) =>
          upstreamPath(ctx.path, ctx.query, stripLength, up.basePath);
        const call = (ctx: RequestContext, sink: ResponseSink) => {
          const up = upstreamOf(ctx);
          callUpstream(
            up,
            {
              path: path(ctx, up),
              method: ctx.method,
              headers: ctx.headers,
              body: bodyOf(ctx),
              keyed: ctx.keyed,
            },
            sink,
            deps.metrics,
          );
        };
        return {
          handle: (ctx) => call(ctx, new ClientSink(ctx)),
          call,
          upgrade: (ctx, socket, head) => {
            const up = upstreamOf(ctx);
            tunnel(ctx, up, path(ctx, up), socket, head);
          },
        };
      },
    };
  },
});

/** The bytes read already, or the client's stream (bounded as it goes when chunked). */
function bodyOf(ctx: RequestContext): Body {
  if (ctx.body !== null) return ctx.body;
  if (!ctx.hasBody) return null;
  return ctx.chunked ? limitedStream(ctx.req, ctx.route.deps.limits.maxBodyBytes) : ctx.req;
}
