/**
 * The metrics a plugin (or a handler kind) defines in its own folder: a MetricSet made once per data plane's
 * registry (Metrics.of), registered when the data plane starts so that /metrics names every
 * family from the first scrape, and looked up by the plugin when a snapshot creates it (never
 * per request). The core's Metrics is the host: its registry, the per-consumer analytics, and
 * route-labelled counters whose series it drops with the routes (Metrics.retain).
 */
import type { Registry } from 'prom-client';
import type { ConsumerAnalytics } from './consumer-analytics.ts';
import type { HotCounter, HotHistogram } from './hot-metrics.ts';

export interface MetricHost {
  readonly registry: Registry;
  /** Per-consumer analytics; null when off (the default). */
  readonly consumers: ConsumerAnalytics | null;
  /**
   * A counter on the registry labelled by route id first (one to three labels): the series of
   * routes no longer in the table are dropped.
   */
  routeCounter(o: { name: string; help: string; labelNames: readonly ['route', ...string[]] }): HotCounter;
  /** Likewise a histogram (seconds; the core's latency buckets unless given). */
  routeHistogram(o: {
    name: string;
    help: string;
    labelNames: readonly ['route', ...string[]];
    buckets?: readonly number[];
  }): HotHistogram;
}

export class MetricSet<M> {
  /** For messages. */
  readonly name: string;
  readonly make: (host: MetricHost) => M;

  constructor(name: string, make: (host: MetricHost) => M) {
    this.name = name;
    this.make = make;
  }
}

/** A plugin's metrics: `make` registers them on the host's registry and returns what the plugin updates. */
export const metricSet = <M>(name: string, make: (host: MetricHost) => M): MetricSet<M> =>
  new MetricSet(name, make);
