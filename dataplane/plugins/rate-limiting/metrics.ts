/**
 * What rate-limiting counts, and each request's result (its slot, shown in the access log as
 * `rateLimit`). The metric names and labels are what dashboards and alerts query.
 */
import type { RequestContext } from '../../pipeline/context.ts';
import { slot } from '../../pipeline/slot.ts';
import { metricSet } from '../../observability/metric-set.ts';

export type RateLimitResult = 'allowed' | 'limited' | 'fallback' | 'unavailable';

/** The request's result: the first plugin's `allowed`, or the last other result (limited, fallback, unavailable). */
export const RESULT = slot<RateLimitResult>('rate-limit result', { log: 'rateLimit' });

export const RATE_LIMIT_METRICS = metricSet('rate-limiting', (host) => {
  const requests = host.routeCounter({
    name: 'sluice_rate_limit_requests_total',
    help:
      'Rate-limit decisions by route id and result: allowed, limited (429), fallback (Redis down, counted ' +
      'locally), unavailable (Redis down, failMode closed: 503).',
    labelNames: ['route', 'result'] as const,
  });
  const consumers = host.consumers;
  const limited =
    consumers?.counter({
      name: 'sluice_consumer_rate_limited_total',
      help: 'Requests refused by a rate limit (429), by route id and consumer.',
      labelNames: ['route', 'consumer'] as const,
    }) ?? null;
  return {
    /** A decision on the request: its slot (an earlier plugin's result stays over `allowed`), its count, a 429 per consumer. */
    request(ctx: RequestContext, result: RateLimitResult): void {
      if (result !== 'allowed' || RESULT.get(ctx) === undefined) RESULT.set(ctx, result);
      const route = ctx.route.id;
      requests.series(route, result).inc();
      if (result === 'limited' && limited !== null)
        limited.series(route, consumers!.label(ctx.consumer?.id)).inc();
    },
  };
});

export type RateLimitMetrics = ReturnType<typeof RATE_LIMIT_METRICS.make>;
