/** What the two transformers share: the count of what they passed untouched, labelled by which one. */
import { metricSet } from '../observability/metric-set.ts';

export const TRANSFORM_SKIPPED = metricSet('transformers', (host) => {
  const skipped = host.routeCounter({
    name: 'sluice_transform_skipped_total',
    help:
      'Bodies a transformer passed untouched, by route id, plugin and reason: not_json, invalid_json, not_object, ' +
      'too_large, encoded (Content-Encoding); and unsafe_header: a response header value left out (CR, LF or NUL).',
    labelNames: ['route', 'plugin', 'reason'] as const,
  });
  return (route: string, plugin: string, reason: string): void => skipped.series(route, plugin, reason).inc();
});
