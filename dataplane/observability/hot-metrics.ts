/**
 * Counters and histograms for the request path, in plain fields. prom-client's label children
 * validate and hash their labels on every inc() and observe() (its Counter and Histogram
 * `labels()` only bind the label object), and the request counter, the latency histograms and
 * the per-request plugin counters cost about 2 µs of every proxied request that way (3 % of a
 * GET's CPU in the profile). Here a series is looked up once, kept by the caller, and updated
 * with a few additions; prom-client reads the series at scrape time through the registry's
 * metric interface (name, help, type, get()), so /metrics is the same text.
 */
import type { Registry } from 'prom-client';

type Labels = Record<string, string>;

interface MetricValue {
  labels: Record<string, string | number>;
  value: number;
  metricName?: string;
}

abstract class HotMetric<S> {
  readonly name: string;
  readonly help: string;
  /** How prom-client's AggregatorRegistry merges workers' values. */
  readonly aggregator = 'sum';
  /** As prom-client's metrics have them (docs/reference/metrics.md lists them). */
  readonly labelNames: readonly string[];
  readonly #series = new Map<string, { labels: Labels; series: S }>();
  /**
   * Optimization: the series again, in one nested Map per label (values in labelNames order).
   * The label values callers pass are the same string objects every time (route ids, method
   * names, status classes), whose hashes V8 keeps: a few Map reads find a series where joining
   * the values into one key allocated and hashed a new string per call (0.2 µs a request).
   * Cleared when series are removed; the slow path fills it again.
   */
  #index = new Map<string, unknown>();

  constructor(o: { name: string; help: string; labelNames: readonly string[]; registers: Registry[] }) {
    this.name = o.name;
    this.help = o.help;
    if (o.labelNames.length < 1 || o.labelNames.length > 3)
      throw new Error(`${o.name}: a hot metric has one to three labels`);
    this.labelNames = o.labelNames;
    for (const r of o.registers) r.registerMetric(this as never);
  }

  protected abstract create(): S;
  /** Adds `from`'s counts into `into`. */
  protected abstract add(into: S, from: S): void;

  /** The series of these label values (in labelNames order; at most three labels). */
  series(a: string, b?: string, c?: string): S {
    const depth = this.labelNames.length;
    const l1 = this.#index.get(a);
    if (l1 !== undefined) {
      if (depth === 1) return l1 as S;
      const l2 = (l1 as Map<string, unknown>).get(b as string);
      if (l2 !== undefined) {
        if (depth === 2) return l2 as S;
        const l3 = (l2 as Map<string, unknown>).get(c as string);
        if (l3 !== undefined) return l3 as S;
      }
    }
    return this.#lookup(depth === 1 ? [a] : depth === 2 ? [a, b as string] : [a, b as string, c as string]);
  }

  #lookup(values: string[]): S {
    const key = values.join('\u0000');
    let entry = this.#series.get(key);
    if (entry === undefined) {
      const labels: Labels = {};
      this.labelNames.forEach((n, i) => {
        labels[n] = values[i];
      });
      entry = { labels, series: this.create() };
      this.#series.set(key, entry);
    }
    let level = this.#index;
    for (let i = 0; i < values.length - 1; i++) {
      let next = level.get(values[i]) as Map<string, unknown> | undefined;
      if (next === undefined) {
        next = new Map();
        level.set(values[i], next);
      }
      level = next;
    }
    level.set(values[values.length - 1], entry.series);
    return entry.series;
  }

  remove(...values: string[]): void {
    this.#series.delete(values.join('\u0000'));
    this.#index = new Map();
  }

  /** Every series whose `label` is `from` is added into the one with `to` instead, and dropped (counts move, none is lost). */
  relabel(label: string, from: string, to: string): void {
    for (const [key, e] of [...this.#series]) {
      if (e.labels[label] !== from) continue;
      this.#series.delete(key);
      this.#index = new Map();
      this.add(this.#lookup(this.labelNames.map((n) => (n === label ? to : e.labels[n]))), e.series);
    }
  }

  /** Drops every series whose labels fail `keep` (a route or upstream no longer in the table). */
  retain(keep: (labels: Labels) => boolean): void {
    for (const [key, e] of this.#series) if (!keep(e.labels)) this.#series.delete(key);
    this.#index = new Map();
  }

  protected entries(): Iterable<{ labels: Labels; series: S }> {
    return this.#series.values();
  }
}

export class CounterSeries {
  value = 0;
  inc(): void {
    this.value++;
  }
}

export class HotCounter extends HotMetric<CounterSeries> {
  readonly type = 'counter';

  protected create(): CounterSeries {
    return new CounterSeries();
  }

  protected add(into: CounterSeries, from: CounterSeries): void {
    into.value += from.value;
  }

  get(): { name: string; help: string; type: string; aggregator: string; values: MetricValue[] } {
    const values: MetricValue[] = [];
    for (const { labels, series } of this.entries()) values.push({ labels, value: series.value });
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }
}

export class HistogramSeries {
  count = 0;
  sum = 0;
  /** Per bucket, not cumulative; the last one is +Inf. */
  readonly counts: Float64Array;
  readonly #bounds: readonly number[];

  constructor(bounds: readonly number[]) {
    this.#bounds = bounds;
    this.counts = new Float64Array(bounds.length + 1);
  }

  observe(value: number): void {
    const bounds = this.#bounds;
    let i = 0;
    while (i < bounds.length && value > bounds[i]) i++;
    this.counts[i]++;
    this.count++;
    this.sum += value;
  }
}

export class HotHistogram extends HotMetric<HistogramSeries> {
  readonly type = 'histogram';
  readonly #bounds: readonly number[];

  constructor(o: {
    name: string;
    help: string;
    labelNames: readonly string[];
    buckets: readonly number[];
    registers: Registry[];
  }) {
    super(o);
    this.#bounds = o.buckets;
  }

  protected create(): HistogramSeries {
    return new HistogramSeries(this.#bounds);
  }

  protected add(into: HistogramSeries, from: HistogramSeries): void {
    for (let i = 0; i < from.counts.length; i++) into.counts[i] += from.counts[i];
    into.count += from.count;
    into.sum += from.sum;
  }

  get(): { name: string; help: string; type: string; aggregator: string; values: MetricValue[] } {
    const values: MetricValue[] = [];
    for (const { labels, series } of this.entries()) {
      let cumulative = 0;
      for (let i = 0; i <= this.#bounds.length; i++) {
        cumulative += series.counts[i];
        const le = i < this.#bounds.length ? this.#bounds[i] : '+Inf';
        values.push({ labels: { le, ...labels }, value: cumulative, metricName: `${this.name}_bucket` });
      }
      values.push({ labels, value: series.sum, metricName: `${this.name}_sum` });
      values.push({ labels, value: series.count, metricName: `${this.name}_count` });
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }
}

/** A counter that reads a histogram's series counts: requests_total is the request-duration histogram's _count. */
export class CountOf {
  readonly name: string;
  readonly help: string;
  /** The histogram's. */
  readonly labelNames: readonly string[];
  readonly type = 'counter';
  readonly aggregator = 'sum';
  readonly #of: HotHistogram;

  constructor(o: { name: string; help: string; of: HotHistogram; registers: Registry[] }) {
    this.name = o.name;
    this.help = o.help;
    this.#of = o.of;
    this.labelNames = o.of.labelNames;
    for (const r of o.registers) r.registerMetric(this as never);
  }

  get(): { name: string; help: string; type: string; aggregator: string; values: MetricValue[] } {
    const values = this.#of
      .get()
      .values.filter((v) => v.metricName === `${this.#of.name}_count`)
      .map((v) => ({ labels: v.labels, value: v.value }));
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }
}
