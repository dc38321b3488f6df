/**
 * What the catalog's plugins (and handler kinds) declare beyond one snapshot, made when a data
 * plane starts: their metrics on its registry (so /metrics names every family from the first
 * scrape, used or not) and their stores (Redis or memory, kept across snapshots).
 */
import type { Metrics } from '../observability/metrics.ts';
import type { MetricSet } from '../observability/metric-set.ts';
import type { StoreKind } from '../stores/store-kind.ts';
import { HANDLERS, PLUGINS } from './registry.ts';

/** Every plugin's stores, once each (two plugins may share a kind). */
export function declaredStores(): StoreKind<unknown>[] {
  return [...new Set([...PLUGINS.values()].flatMap((p) => p.plugin.stores ?? []))];
}

/** Registers every plugin's and handler kind's metrics on `metrics`' registry; returns it. */
export function withPluginMetrics(metrics: Metrics): Metrics {
  const sets = new Set<MetricSet<unknown>>([
    ...[...PLUGINS.values()].flatMap((p) => p.plugin.metrics ?? []),
    ...[...HANDLERS.values()].flatMap((h) => h.handler.metrics ?? []),
  ]);
  for (const set of sets) metrics.of(set);
  return metrics;
}
