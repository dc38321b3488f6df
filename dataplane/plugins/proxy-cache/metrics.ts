/**
 * What proxy-cache counts, and each request's outcome (its slot, shown in the access log as
 * `cache`). The metric names and labels are what dashboards and alerts query.
 */
import type { RequestContext } from '../../pipeline/context.ts';
import { slot } from '../../pipeline/slot.ts';
import { metricSet } from '../../observability/metric-set.ts';

export type CacheOutcome = 'hit' | 'stale' | 'miss' | 'revalidate' | 'stale_if_error' | 'bypass' | 'method';

/** The request's outcome as the lookup decided it; the access log's `cache` field. */
export const OUTCOME = slot<CacheOutcome>('cache outcome', { log: 'cache' });

export const CACHE_METRICS = metricSet('proxy-cache', (host) => {
  const requests = host.routeCounter({
    name: 'sluice_cache_requests_total',
    help:
      'proxy-cache outcomes by route id: hit, stale (served while revalidating), miss, revalidate, stale_if_error, ' +
      'bypass (the store did not answer: served from the upstream), method (not a cached method).',
    labelNames: ['route', 'result'] as const,
  });
  return {
    /** The lookup's outcome: the request's slot and its count. */
    request(ctx: RequestContext, outcome: CacheOutcome): void {
      OUTCOME.set(ctx, outcome);
      requests.series(ctx.route.id, outcome).inc();
    },
    /** Counted only: a stale entry served when the revalidation failed (the request's outcome stays revalidate). */
    count(route: string, outcome: CacheOutcome): void {
      requests.series(route, outcome).inc();
    },
  };
});

export type CacheMetrics = ReturnType<typeof CACHE_METRICS.make>;
