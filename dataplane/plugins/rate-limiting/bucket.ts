/**
 * A rate limit's bucket: what one count covers, as the name its counters are stored under (in
 * Redis, their hash tag, hence the Cluster slot they live on). Where (the route or its service,
 * and which plugin: two rate-limiting plugins on one route keep two counts) and who (the caller
 * as limitBy names it), hashed: a bucket never holds a credential or an address in clear.
 * Tests that place buckets on Cluster slots compute them here, so they cannot drift from it.
 */
import { createHash } from 'node:crypto';
import type { RequestContext } from '../../pipeline/context.ts';

/** Where a plugin counts on a route: computed once per route. */
export function countedWhere(
  route: { id: string; source: { namespace: string; name: string } },
  pluginId: string,
  service: boolean,
): string {
  return service
    ? `service\n${route.source.namespace}/${route.source.name}\n${pluginId}\n`
    : `route\n${route.id}\n${pluginId}\n`;
}

/** Who is counted, by kind (each its own prefix: a header's value never aliases an address). */
export const who = {
  consumer: (id: string) => `consumer\n${id}`,
  credential: (id: string) => `credential\n${id}`,
  header: (value: string) => `header\n${value}`,
  ip: (address: string) => `ip\n${address}`,
};

/** The caller as limitBy names it; its address when the request does not carry that. */
export function callerOf(ctx: RequestContext, by: string, header: string | undefined): string {
  if (by === 'consumer') {
    if (ctx.consumer) return who.consumer(ctx.consumer.id);
  } else if (by === 'credential') {
    if (ctx.consumer?.credentialId) return who.credential(ctx.consumer.credentialId);
  } else if (by === 'header' && header) {
    const v = ctx.req.headers[header];
    if (v !== undefined) return who.header(Array.isArray(v) ? v.join(',') : v);
  }
  return who.ip(ctx.clientAddress);
}

export const bucketOf = (where: string, caller: string): string =>
  createHash('sha256').update(where).update(caller).digest('hex');
