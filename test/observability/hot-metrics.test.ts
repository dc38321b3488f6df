/**
 * The hot-path series print exactly what prom-client's own Counter and Histogram print for the
 * same updates, so dashboards and promtool see no difference; retain drops series.
 */
import { Counter, Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { CountOf, HotCounter, HotHistogram } from '../../dataplane/observability/hot-metrics.ts';

const BUCKETS = [0.001, 0.01, 0.1, 1];
const OBSERVED: [string, string, number][] = [
  ['route/a', 'GET', 0.0005],
  ['route/a', 'GET', 0.001],
  ['route/a', 'GET', 0.05],
  ['route/b', 'POST', 3],
  ['route/a', 'GET', 0.2],
];

describe('hot metrics', () => {
  it('a histogram and the counter of its counts print as prom-client prints them', async () => {
    const ours = new Registry();
    const theirs = new Registry();
    const hot = new HotHistogram({
      name: 'x_seconds',
      help: 'h',
      labelNames: ['route', 'method'],
      buckets: BUCKETS,
      registers: [ours],
    });
    new CountOf({ name: 'x_total', help: 'c', of: hot, registers: [ours] });
    const ref = new Histogram({
      name: 'x_seconds',
      help: 'h',
      labelNames: ['route', 'method'],
      buckets: BUCKETS,
      registers: [theirs],
    });
    const refCount = new Counter({
      name: 'x_total',
      help: 'c',
      labelNames: ['route', 'method'],
      registers: [theirs],
    });
    for (const [route, method, v] of OBSERVED) {
      hot.series(route, method).observe(v);
      ref.labels(route, method).observe(v);
      refCount.labels(route, method).inc();
    }
    expect(await ours.metrics()).toBe(await theirs.metrics());
  });

  it('a counter prints as prom-client prints it, and retain drops the series of what is gone', async () => {
    const ours = new Registry();
    const theirs = new Registry();
    const hot = new HotCounter({
      name: 'y_total',
      help: 'c',
      labelNames: ['route', 'outcome'],
      registers: [ours],
    });
    const ref = new Counter({
      name: 'y_total',
      help: 'c',
      labelNames: ['route', 'outcome'],
      registers: [theirs],
    });
    for (const [route, outcome] of [
      ['a', 'ok'],
      ['a', 'ok'],
      ['b', 'no'],
    ]) {
      hot.series(route, outcome).inc();
      ref.labels(route, outcome).inc();
    }
    expect(await ours.metrics()).toBe(await theirs.metrics());
    hot.retain((l) => l.route !== 'b');
    ref.remove('b', 'no');
    expect(await ours.metrics()).toBe(await theirs.metrics());
    expect(await ours.metrics()).not.toContain('route="b"');
  });

  it('a series is found again by its label values, also after retain and remove dropped others', async () => {
    const reg = new Registry();
    const hot = new HotCounter({
      name: 'z_total',
      help: 'c',
      labelNames: ['route', 'method', 'class'],
      registers: [reg],
    });
    const a = hot.series('a', 'GET', '2xx');
    // Equal values built anew (not the same string objects) find the same series.
    expect(hot.series(['a'].join(''), `${'G'}ET`, '2xx')).toBe(a);
    expect(hot.series('a', 'GET', '5xx')).not.toBe(a);
    a.inc();
    hot.series('b', 'GET', '2xx').inc();
    hot.retain((l) => l.route !== 'b');
    expect(hot.series('a', 'GET', '2xx')).toBe(a);
    const b = hot.series('b', 'GET', '2xx');
    expect(b.value).toBe(0);
    hot.remove('a', 'GET', '2xx');
    expect(hot.series('a', 'GET', '2xx')).not.toBe(a);
    expect(hot.series('b', 'GET', '2xx')).toBe(b);
    expect(await reg.metrics()).toContain('z_total{route="b",method="GET",class="2xx"} 0');
    // relabel moves counts: the old label values then name a new, empty series.
    const c = hot.series('c', 'GET', '2xx');
    c.inc();
    hot.relabel('route', 'c', 'other');
    expect(hot.series('other', 'GET', '2xx').value).toBe(1);
    expect(hot.series('c', 'GET', '2xx')).not.toBe(c);
    expect(hot.series('c', 'GET', '2xx').value).toBe(0);
    expect(
      () => new HotCounter({ name: 'w', help: 'h', labelNames: ['a', 'b', 'c', 'd'], registers: [] }),
    ).toThrow(/one to three labels/);
  });
});
