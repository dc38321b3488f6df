/** What soap routes count. The metric name and labels are what dashboards query. */
import { metricSet } from '../../observability/metric-set.ts';

/** How a soap route's request ended (sluice_soap_requests_total). */
export type SoapResult = 'ok' | 'client_fault' | 'server_fault' | 'refused' | 'bad_request' | 'error';

export const SOAP_METRICS = metricSet('soap', (host) => {
  const requests = host.routeCounter({
    name: 'sluice_soap_requests_total',
    help:
      'Requests of soap routes, by route id and result: ok, client_fault (422), server_fault (502), refused (the ' +
      'answer: a DTD or entity, too large or deep, not a SOAP answer), bad_request (400, no call), error (no answer: ' +
      'time-out, open breaker, no connection).',
    labelNames: ['route', 'result'] as const,
  });
  return (route: string, result: SoapResult): void => requests.series(route, result).inc();
});
