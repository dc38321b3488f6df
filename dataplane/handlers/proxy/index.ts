/**
 * proxy: the request streams to the route's upstream and the response streams back, both
 * ways without buffering unless something on the route read the body first. WebSocket
 * upgrades are tunnelled to the same upstream. A route with a canary (a version's weighted
 * backends) is two such handlers, one per upstream (each with its own pool and breaker), and
 * picks one per request (canary.ts); a route without one is bound exactly as before.
 */
import type { BoundHandler, RuntimeDeps } from '../../pipeline/route.ts';
import type { RequestContext } from '../../pipeline/context.ts';
import { limitedStream } from '../../upstream/body.ts';
import { type Body, callUpstream, type ResponseSink } from '../../upstream/call.ts';
import { upstreamPath } from '../../upstream/path.ts';
import type { UpstreamRuntime } from '../../upstream/pools.ts';
import { ClientSink } from '../client-sink.ts';
import { defineHandler } from '../types.ts';
import { canaryChooser } from './canary.ts';
import { manifest } from './manifest.ts';
import { tunnel } from './tunnel.ts';

export default defineHandler(manifest, {
  create(deps) {
    return {
      bind(_route, entry, stripLength) {
        const main = bindTo(deps.upstream(entry.upstream), stripLength, deps);
        if (entry.canary === undefined) return main;
        const canary = bindTo(deps.upstream(entry.canary.upstream), stripLength, deps);
        const toCanary = canaryChooser(entry.canary);
        const pick = (ctx: RequestContext) => (toCanary(ctx) ? canary : main);
        return {
          handle: (ctx) => pick(ctx).handle(ctx),
          call: (ctx, sink) => pick(ctx).call(ctx, sink),
          upgrade: (ctx, socket, head) => pick(ctx).upgrade!(ctx, socket, head),
        };
      },
    };
  },
});

/** The handler of a route for one upstream. */
function bindTo(up: UpstreamRuntime, stripLength: number, deps: RuntimeDeps): BoundHandler {
  const path = (ctx: RequestContext) =>
    upstreamPath(ctx.path, ctx.query, stripLength, up.basePath, ctx.upstreamPath);
  // `signal`: the client's (RequestContext.signal) when the answer goes to it; none for a call in
  // the background (an accepted asynchronous operation, a cache refresh), which outlives the client.
  const call = (ctx: RequestContext, sink: ResponseSink, signal?: AbortSignal) => {
    ctx.upstreamAddress = up.origin;
    callUpstream(
      up,
      {
        path: path(ctx),
        method: ctx.method,
        headers: ctx.headers,
        body: bodyOf(ctx),
        keyed: ctx.keyed,
        signal,
        span: ctx.span,
        peer: ctx,
      },
      sink,
      deps.metrics,
    );
  };
  return {
    handle: (ctx) => call(ctx, new ClientSink(ctx), ctx.signal),
    call: (ctx, sink) => call(ctx, sink),
    upgrade: (ctx, socket, head) => tunnel(ctx, up, path(ctx), socket, head),
  };
}

/** The bytes read already, or the client's stream (bounded as it goes when chunked). */
function bodyOf(ctx: RequestContext): Body {
  if (ctx.body !== null) return ctx.body;
  if (!ctx.hasBody) return null;
  return ctx.chunked ? limitedStream(ctx.req, ctx.route.deps.limits.maxBodyBytes) : ctx.req;
}
