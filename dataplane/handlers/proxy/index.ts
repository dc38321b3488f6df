/**
 * proxy: the request streams to the route's upstream and the response streams back, both
 * ways without buffering unless something on the route read the body first. WebSocket
 * upgrades are tunnelled to the same upstream. An h2c upstream gets HTTP/2 with prior
 * knowledge (upstream/endpoint.ts, h2c-headers.ts), its response trailers passed on
 * (client-sink.ts): gRPC end to end. A route with a canary (a version's weighted backends) or
 * weighted `backends` (Gateway API's) is one such handler per upstream (each with its own pool
 * and breaker), and picks one per request (canary.ts, weighted.ts); a route of one upstream is
 * bound to it alone, with no pick on its path. A weighted backend's own header edits are made
 * once it is picked (editingHeaders); a route's mirrors get their copies beside the main call
 * (mirror.ts). The path the upstream gets is the route's one rewrite (upstream/path.ts).
 */
import type { Abortable } from '../../upstream/abortable.ts';
import type { BoundHandler, RuntimeDeps } from '../../pipeline/route.ts';
import type { RequestContext } from '../../pipeline/context.ts';
import { applyHeaderVerbs, compileHeaderVerbs, NO_SOURCES } from '../../pipeline/transform/headers.ts';
import { template } from '../../config/template.ts';
import { limitedStream } from '../../upstream/body.ts';
import { type Body, callUpstream, type ResponseSink } from '../../upstream/call.ts';
import { h2cRequestHeaders } from '../../upstream/h2c-headers.ts';
import { type PathRewrite, upstreamPath } from '../../upstream/path.ts';
import type { UpstreamRuntime } from '../../upstream/pools.ts';
import { ClientSink } from '../client-sink.ts';
import { defineHandler, type HandlerDeps } from '../types.ts';
import { canaryChooser } from './canary.ts';
import { type HeaderEdits, manifest, type ProxyHandler, type WeightedBackend } from './manifest.ts';
import { interceptingErrors } from './error-pages.ts';
import { bindMirrors, MIRROR_METRICS, sendMirrors } from './mirror.ts';
import { tunnel } from './tunnel.ts';
import { weightedChooser } from './weighted.ts';

export default defineHandler(manifest, {
  metrics: [MIRROR_METRICS],
  create(deps) {
    const mirrorCount = deps.metrics.of(MIRROR_METRICS);
    const bindMain = (entry: ProxyHandler, rewritePath: PathRewrite | null): BoundHandler => {
      if (entry.backends !== undefined) return bindWeighted(entry.backends, rewritePath, deps);
      // The door let through exactly one of upstream and backends.
      const main = bindTo(deps.upstream(entry.upstream!), rewritePath, deps);
      if (entry.canary === undefined) return main;
      const canary = bindTo(deps.upstream(entry.canary.upstream), rewritePath, deps);
      const toCanary = canaryChooser(entry.canary);
      return picking((ctx) => (toCanary(ctx) ? canary : main));
    };
    return {
      bind(_route, entry, rewritePath) {
        const bound = bindMain(entry, rewritePath);
        const pages = entry.errorPages;
        const main =
          pages === undefined
            ? bound
            : interceptingErrors(pages, deps.upstream(pages.upstream), deps.metrics, bound);
        if (entry.mirrors === undefined) return main;
        // Routes without mirrors are bound to the main handler alone: their path pays nothing.
        const mirrors = bindMirrors(entry.mirrors, deps.upstream);
        const path = (ctx: RequestContext) => (up: UpstreamRuntime) =>
          upstreamPath(ctx.path, ctx.query, rewritePath, up.basePath, ctx.upstreamPath);
        return {
          handle: (ctx) => {
            sendMirrors(ctx, mirrors, path(ctx), mirrorCount);
            main.handle(ctx);
          },
          call: (ctx, sink, signal) => {
            sendMirrors(ctx, mirrors, path(ctx), mirrorCount);
            main.call(ctx, sink, signal);
          },
          upgrade: (ctx, socket, head) => main.upgrade!(ctx, socket, head),
        };
      },
    };
  },
});

/**
 * Weighted backends: those of weight 0 are left out, and one left is bound alone. A backend with
 * a problem instead of an upstream answers its share with that problem.
 */
function bindWeighted(
  backends: readonly WeightedBackend[],
  rewritePath: PathRewrite | null,
  deps: HandlerDeps,
): BoundHandler {
  const live = backends.filter((b) => b.weight > 0);
  const bound = live.map((b) => {
    const h =
      b.upstream !== undefined ? bindTo(deps.upstream(b.upstream), rewritePath, deps) : answering(b.problem!);
    return b.requestHeaders ? editingHeaders(b.requestHeaders, h) : h;
  });
  if (bound.length === 1) return bound[0];
  const choose = weightedChooser(live.map((b) => b.weight));
  return picking(() => bound[choose()]);
}

/** A share answered with a problem, calling nothing (an upgrade too: the problem on its socket). */
function answering(problem: NonNullable<WeightedBackend['problem']>): BoundHandler {
  const call = (ctx: RequestContext, sink: ResponseSink) => {
    if (ctx.hasBody && ctx.body === null) ctx.req.resume(); // nothing sends it: read and dropped
    sink.end({ code: problem, sent: false });
  };
  return {
    handle: (ctx) => call(ctx, new ClientSink(ctx)),
    call,
    upgrade: (ctx) => call(ctx, new ClientSink(ctx)),
  };
}

/** A backend's own header edits (literal values), made on the request it is picked for. */
function editingHeaders(edits: HeaderEdits, h: BoundHandler): BoundHandler {
  const verbs = compileHeaderVerbs(edits, template);
  if (verbs === null) return h;
  const edit = (ctx: RequestContext) => void applyHeaderVerbs(verbs, ctx.headers, NO_SOURCES);
  return {
    handle: (ctx) => {
      edit(ctx);
      h.handle(ctx);
    },
    call: (ctx, sink, signal) => {
      edit(ctx);
      h.call(ctx, sink, signal);
    },
    upgrade: (ctx, socket, head) => {
      edit(ctx);
      h.upgrade!(ctx, socket, head);
    },
  };
}

/** One handler per request among several: the whole request (its tries, its upgrade) goes to the one picked. */
function picking(pick: (ctx: RequestContext) => BoundHandler): BoundHandler {
  return {
    handle: (ctx) => pick(ctx).handle(ctx),
    call: (ctx, sink, signal) => pick(ctx).call(ctx, sink, signal),
    upgrade: (ctx, socket, head) => pick(ctx).upgrade!(ctx, socket, head),
  };
}

/** The handler of a route for one upstream. */
function bindTo(up: UpstreamRuntime, rewritePath: PathRewrite | null, deps: RuntimeDeps): BoundHandler {
  const path = (ctx: RequestContext) =>
    upstreamPath(ctx.path, ctx.query, rewritePath, up.basePath, ctx.upstreamPath);
  // `signal`: the client's (RequestContext.signal) when the answer goes to it; none for a call in
  // the background (an accepted asynchronous operation, a cache refresh), which outlives the client.
  const call = (ctx: RequestContext, sink: ResponseSink, signal?: Abortable) => {
    ctx.upstreamAddress = up.origin;
    const cookie = up.stick(ctx.headers);
    if (cookie !== null) ctx.responseHeaders = { ...ctx.responseHeaders, 'set-cookie': cookie };
    callUpstream(
      up,
      {
        path: path(ctx),
        method: ctx.method,
        headers: up.h2c ? h2cRequestHeaders(ctx.headers, ctx.teTrailers) : ctx.headers,
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
    call: (ctx, sink, signal) => call(ctx, sink, signal),
    upgrade: (ctx, socket, head) => tunnel(ctx, up, path(ctx), socket, head),
  };
}

/** The bytes read already, or the client's stream (bounded as it goes when chunked). */
function bodyOf(ctx: RequestContext): Body {
  if (ctx.body !== null) return ctx.body;
  if (!ctx.hasBody) return null;
  return ctx.chunked ? limitedStream(ctx.req, ctx.route.maxBodyBytes) : ctx.req;
}
