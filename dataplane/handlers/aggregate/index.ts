/**
 * aggregate: answers GET and HEAD with one JSON object combining the route's backend calls
 * (aggregation.ts). Bound once per route: each call's upstream and compiled path template, the
 * route's pattern. Per request: the path parameters captured, the headers the calls carry, the
 * calls dispatched.
 */
import type { Abortable } from '../../upstream/abortable.ts';
import { template } from '../../config/template.ts';
import type { RequestContext } from '../../pipeline/context.ts';
import { RequestSources } from '../../pipeline/transform/sources.ts';
import { captureParams, compilePathRewrite } from '../../pipeline/transform/path-rewrite.ts';
import type { ResponseSink } from '../../upstream/call.ts';
import { callHeaders } from '../call-headers.ts';
import { ClientSink } from '../client-sink.ts';
import { defineHandler } from '../types.ts';
import { Aggregation, type BoundAggregate, callPaths } from './aggregation.ts';
import { manifest } from './manifest.ts';
import { AGGREGATE_METRICS } from './metrics.ts';

const JSON_ACCEPT = { accept: 'application/json' };

export default defineHandler(manifest, {
  metrics: [AGGREGATE_METRICS],
  create(deps) {
    const callTime = deps.metrics.of(AGGREGATE_METRICS);
    return {
      bind(route, entry) {
        const agg: BoundAggregate = {
          routeId: route.id,
          calls: entry.calls.map((c) => ({
            name: c.name,
            required: c.required,
            // Each call's time is within the overall deadline: the last timer to fire is that deadline.
            timeoutMs: Math.min(c.timeoutMs, entry.timeoutMs),
            up: deps.upstream(c.upstream),
            path: compilePathRewrite({ pattern: entry.pattern ?? '/', rewrite: c.path }, template),
          })),
          maxBodyBytes: entry.maxBodyBytes,
          metrics: deps.metrics,
          callTime,
        };
        const pattern =
          entry.pattern === undefined
            ? null
            : compilePathRewrite({ pattern: entry.pattern, rewrite: '/' }, template);
        // `signal`: the client's when the answer goes to it (none for a call in the background).
        const call = (ctx: RequestContext, sink: ResponseSink, signal?: Abortable) => {
          if (ctx.method !== 'GET' && ctx.method !== 'HEAD')
            return sink.end({ code: 'SLC_ERR_METHOD_NOT_ALLOWED', sent: false });
          const params = pattern === null ? null : captureParams(pattern, ctx.path);
          if (pattern !== null && params === null)
            return sink.end({ code: 'SLC_ERR_ROUTE_NOT_FOUND', sent: false });
          if (ctx.hasBody && ctx.body === null) ctx.req.resume(); // a body no call sends: read and dropped
          // Every call's path first: a request value that cannot stand in one refuses the request before any call.
          const paths = callPaths(agg, new RequestSources(ctx, params, false));
          if (paths === null) return sink.end({ code: 'SLC_ERR_BAD_PATH_VALUE', sent: false });
          new Aggregation(agg, sink, ctx.requestId).start(
            callHeaders(ctx.headers, JSON_ACCEPT),
            paths,
            ctx.span,
            signal,
          );
        };
        return {
          handle: (ctx) => call(ctx, new ClientSink(ctx), ctx.signal),
          call: (ctx, sink) => call(ctx, sink),
        };
      },
    };
  },
});
