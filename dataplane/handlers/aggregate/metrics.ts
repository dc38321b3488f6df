/** What aggregate routes measure. The metric name and labels are what dashboards query. */
import { metricSet } from '../../observability/metric-set.ts';

const NS_PER_S = 1e9;

export const AGGREGATE_METRICS = metricSet('aggregate', (host) => {
  const calls = host.routeHistogram({
    name: 'sluice_aggregate_call_seconds',
    help:
      'Backend calls of aggregate routes, by route id, call name and result: ok, error (a status, a non-JSON or ' +
      'too large answer, no connection) or timeout; from dispatch to the whole answer read.',
    labelNames: ['route', 'call', 'result'] as const,
  });
  return (route: string, call: string, result: 'ok' | 'error' | 'timeout', startNs: bigint): void =>
    calls.series(route, call, result).observe(Number(process.hrtime.bigint() - startNs) / NS_PER_S);
});
