/**
 * The cache key: `<path>?<sorted query>|GET|h=<host>|r=<route id>[|v=<name>=<value>…][|c=<consumer>]`.
 * The query is sorted by parameter name, repeated parameters keeping their order (queryKey says
 * why and what counts as repeated). The path comes first so the admin API purges by path prefix; the route is there because two
 * routes can serve one path and host (a header match selecting a version). HEAD reads GET's entries and a
 * POST's response is stored as the GET of its URI, so the method part is always GET. The
 * consumer part is there on authenticated routes: one caller's entries are never another's
 * (`shared` leaves it out: the key of an entry stored once for everyone, Cache-Control: public).
 */
import type { RequestContext } from '../../pipeline/context.ts';
import { queryKey } from '../../pipeline/query-key.ts';
import { CALLER_PART } from '../../stores/cache-store.ts';

export interface KeyInput {
  path: string;
  query: string;
  host: string;
  routeId: string;
  /** Request header values of the configured varyHeaders, in their order. */
  vary: readonly (string | undefined)[];
  varyNames: readonly string[];
}

export function sharedKey(k: KeyInput): string {
  let key = `${k.path}?${queryKey(k.query)}|GET|h=${k.host.toLowerCase()}|r=${k.routeId}`;
  for (let i = 0; i < k.varyNames.length; i++)
    key += `|v=${k.varyNames[i]}=${encodeURIComponent(k.vary[i] ?? '')}`;
  return key;
}

export const consumerKey = (shared: string, consumer: string): string =>
  `${shared}${CALLER_PART}${encodeURIComponent(consumer)}`;

/** The request's Host as the client sent it: HTTP/2 names it :authority (Node's compatibility API sets no host). */
export function requestHost(ctx: RequestContext): string {
  const h = ctx.req.headers;
  return h.host ?? (h[':authority'] as string | undefined) ?? '';
}

/** The request's keys: [its caller's own, the shared one] on an authenticated route, else [the shared one]. */
export function requestKeys(ctx: RequestContext, varyNames: readonly string[]): string[] {
  const headers = ctx.req.headers;
  const vary: (string | undefined)[] = [];
  for (const name of varyNames) {
    const v = headers[name];
    vary.push(Array.isArray(v) ? v.join(', ') : v);
  }
  const shared = sharedKey({
    path: ctx.path,
    query: ctx.query,
    host: requestHost(ctx),
    routeId: ctx.route.id,
    vary,
    varyNames,
  });
  return ctx.consumer === null ? [shared] : [consumerKey(shared, ctx.consumer.id), shared];
}
