/**
 * What idempotency counts, and the outcome each request ends with (its slot, shown in the access
 * log as `idempotency`). The metric names and labels are what dashboards and alerts query.
 */
import type { RequestContext } from '../../pipeline/context.ts';
import { slot } from '../../pipeline/slot.ts';
import { metricSet } from '../../observability/metric-set.ts';

export type IdempotencyOutcome =
  | 'executed'
  | 'replayed'
  | 'conflict'
  | 'mismatch'
  | 'takeover'
  | 'accepted'
  | 'rejected_key'
  | 'store_error'
  | 'lease_lost';

/** The request's outcome (one per request with a key); the access log's `idempotency` field. */
export const OUTCOME = slot<IdempotencyOutcome>('idempotency outcome', { log: 'idempotency' });

export const IDEMPOTENCY_METRICS = metricSet('idempotency', (host) => {
  const requests = host.routeCounter({
    name: 'sluice_idempotency_requests_total',
    help:
      'Requests with an Idempotency-Key, by route id and outcome: executed, replayed, conflict (409), mismatch (422), ' +
      'takeover (a lapsed lease), accepted (202), rejected_key (400/401), store_error (503), lease_lost.',
    labelNames: ['route', 'outcome'] as const,
  });
  const consumers = host.consumers;
  const byConsumer =
    consumers?.counter({
      name: 'sluice_consumer_idempotency_requests_total',
      help: 'Requests with an Idempotency-Key by route id, consumer and outcome (as sluice_idempotency_requests_total).',
      labelNames: ['route', 'consumer', 'outcome'] as const,
    }) ?? null;
  return {
    /** The request's outcome: its slot, its count, and its consumer's (analytics on). */
    request(ctx: RequestContext, outcome: IdempotencyOutcome): void {
      OUTCOME.set(ctx, outcome);
      const route = ctx.route.id;
      requests.series(route, outcome).inc();
      if (byConsumer !== null) byConsumer.series(route, consumers!.label(ctx.consumer?.id), outcome).inc();
    },
    /** An outcome after the request was answered (lease lost, a failed store of the response): counted only. */
    later(route: string, outcome: IdempotencyOutcome): void {
      requests.series(route, outcome).inc();
    },
  };
});

export type IdempotencyMetrics = ReturnType<typeof IDEMPOTENCY_METRICS.make>;
