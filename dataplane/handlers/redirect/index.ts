/**
 * redirect: answers with the entry's status and a Location built from the request (location.ts),
 * an empty body and no upstream call. The answer goes through the route's sink like an
 * upstream's, so response plugins (headers, idempotency, cache) see it.
 */
import type { TLSSocket } from 'node:tls';
import type { RequestContext } from '../../pipeline/context.ts';
import type { ResponseSink } from '../../upstream/call.ts';
import { ClientSink } from '../client-sink.ts';
import { deliver } from '../deliver.ts';
import { defineHandler } from '../types.ts';
import { locationOf, pathRule } from './location.ts';
import { manifest } from './manifest.ts';

const EMPTY = Buffer.alloc(0);

export default defineHandler(manifest, {
  create() {
    return {
      bind(route, entry) {
        const path = pathRule(entry, route.match.path.value);
        const call = (ctx: RequestContext, sink: ResponseSink) => {
          const location = locationOf(entry, path, {
            scheme: (ctx.req.socket as TLSSocket).encrypted ? 'https' : 'http',
            host: requestHost(ctx),
            path: ctx.path,
            query: ctx.query,
          });
          if (ctx.hasBody && ctx.body === null) ctx.req.resume(); // nothing sends it: read and dropped
          if (location === null) return sink.end({ code: 'SLC_ERR_BAD_HEADER', sent: false });
          deliver(sink, entry.statusCode, { location }, EMPTY);
        };
        return { handle: (ctx) => call(ctx, new ClientSink(ctx)), call };
      },
    };
  },
});

/** The Host the client sent (HTTP/2: its :authority), port included; '' when none. */
function requestHost(ctx: RequestContext): string {
  const h = ctx.req.headers;
  return h.host ?? (h[':authority'] as string | undefined) ?? '';
}
