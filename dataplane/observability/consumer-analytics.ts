/**
 * API analytics per consumer and route (off by default: --analytics-consumers N turns it on).
 * The consumer label is bounded: the first N consumers seen keep their own label for the life of
 * the process, every other one counts as `other`, and a request without a consumer as `(none)`,
 * so a credential-stuffing run of a million keys adds one series, not a million.
 *
 * Under --workers the pod's first N are decided by the cluster primary, not by each worker
 * (each would name its own first N, up to N per worker, and fold into `other` requests of a
 * consumer its sibling names). A worker counts a consumer it has not heard about under the
 * consumer's own label and asks the primary (`ask`, once); the primary's answer (`decided`)
 * keeps the label, or moves the counts into `other`. The primary relabels what it has not named
 * when it sums the workers' series (cluster/consumer-names.ts), and since a worker's question
 * goes out before any /metrics answer that shows the consumer, the scrape always sees the
 * decided labels. At most PENDING consumers wait for an answer; past that (a burst of new
 * consumers within one IPC round trip) a new one counts as `other` at once.
 *
 * The core counts requests and bytes here; a plugin adds its own per-consumer counters
 * (`counter`, from its metric set), which are relabelled and dropped with these.
 */
import type { Registry } from 'prom-client';
import { HotCounter, HotHistogram } from './hot-metrics.ts';
import { LATENCY_BUCKETS, NS_PER_S, statusClass } from './buckets.ts';

/** Consumers a cluster worker may count under their own label while the primary has not answered. */
const PENDING = 1_000;

export class ConsumerAnalytics {
  readonly #registry: Registry;
  readonly #latency: HotHistogram;
  readonly #bytes: HotCounter;
  /** Every consumer-labelled metric: the core's two and the plugins' counters. */
  readonly #all: (HotCounter | HotHistogram)[];
  readonly #max: number;
  readonly #named = new Set<string>();
  /** A cluster worker's question to the primary; null: this process decides. */
  readonly #ask: ((consumer: string) => void) | null;
  /** Asked about, not answered yet. */
  readonly #pending = new Set<string>();
  /** The primary named N (all in #named): every other consumer is `other`, nothing more to ask. */
  #full = false;

  constructor(registry: Registry, maxConsumers: number, ask: ((consumer: string) => void) | null = null) {
    this.#registry = registry;
    this.#max = maxConsumers;
    this.#ask = ask;
    this.#latency = new HotHistogram({
      name: 'sluice_consumer_request_duration_seconds',
      help:
        'Time from request to the end of the response, by route id, consumer (the first N seen, then "other"; ' +
        '"(none)" without one) and status class: its _count is requests, 4xx and 5xx are errors.',
      labelNames: ['route', 'consumer', 'status_class'] as const,
      buckets: LATENCY_BUCKETS,
      registers: [registry],
    });
    this.#bytes = new HotCounter({
      name: 'sluice_consumer_bytes_total',
      help: 'Bytes by route id, consumer and direction: in (request body), out (response: head and body on HTTP/1, body on h2).',
      labelNames: ['route', 'consumer', 'direction'] as const,
      registers: [registry],
    });
    this.#all = [this.#latency, this.#bytes];
  }

  /**
   * A plugin's per-consumer counter, labelled route, consumer (its `label`) and at most one more:
   * its series move to `other` and are dropped with the core's.
   */
  counter(o: {
    name: string;
    help: string;
    labelNames: readonly ['route', 'consumer', ...string[]];
  }): HotCounter {
    const c = new HotCounter({ ...o, registers: [this.#registry] });
    this.#all.push(c);
    return c;
  }

  /** The label for a consumer id: its own while fewer than N have one, else "other". */
  label(consumer: string | undefined): string {
    if (consumer === undefined) return '(none)';
    if (this.#named.has(consumer)) return consumer;
    if (this.#ask !== null) return this.#provisional(consumer);
    if (this.#named.size >= this.#max) return 'other';
    this.#named.add(consumer);
    return consumer;
  }

  /** A cluster worker: a consumer the primary has not named (yet). */
  #provisional(consumer: string): string {
    if (this.#pending.has(consumer)) return consumer;
    if (this.#full || this.#pending.size >= PENDING) return 'other';
    this.#pending.add(consumer);
    this.#ask!(consumer);
    return consumer;
  }

  /**
   * The primary's answer about a consumer asked about: named, or `other` (its counts move
   * there). `full`: the N it named, once it has (named through any worker: all keep their label
   * here too, and every other consumer is `other` without asking).
   */
  decided(consumer: string, named: boolean, full: readonly string[] | null): void {
    this.#pending.delete(consumer);
    if (full !== null) {
      this.#full = true;
      for (const c of full) this.#named.add(c);
    }
    if (named) {
      this.#named.add(consumer);
      return;
    }
    for (const m of this.#all) m.relabel('consumer', consumer, 'other');
  }

  request(
    route: string,
    consumer: string | undefined,
    status: number,
    startNs: bigint,
    bytesIn: number,
    bytesOut: number,
  ): void {
    const who = this.label(consumer);
    this.#latency
      .series(route, who, statusClass(status))
      .observe(Number(process.hrtime.bigint() - startNs) / NS_PER_S);
    if (bytesIn > 0) this.#bytes.series(route, who, 'in').value += bytesIn;
    if (bytesOut > 0) this.#bytes.series(route, who, 'out').value += bytesOut;
  }

  /** Drops the series of routes no longer in the table. */
  retain(routeIds: ReadonlySet<string>): void {
    const keep = (l: Record<string, string>) => routeIds.has(l.route);
    for (const m of this.#all) m.retain(keep);
  }
}
