/**
 * This process's rate-limit counters stay within their bound when clients name their own buckets
 * (limitBy header, rotating IPv6 addresses): the least recently hit counters go, a bucket in use
 * keeps its count through a flood of new ones, expired counters are not counted as evictions,
 * and through the data plane's Stores every eviction is counted on sluice_store_evictions_total.
 */
import { describe, expect, it } from 'vitest';
import { Metrics } from '../../dataplane/observability/metrics.ts';
import { LOCAL_COUNTERS } from '../../dataplane/plugins/rate-limiting/store.ts';
import { Stores } from '../../dataplane/stores/open-stores.ts';
import { capturedLog } from '../helpers/servers.ts';
import { DEFAULT_MAX_COUNTERS, MemoryRateLimitStore } from '../../dataplane/stores/rate-limit-store.ts';

const HOUR = [{ seconds: 3600, limit: 5 }];

describe('memory rate-limit counters: bounded', () => {
  it('keeps at most maxCounters, dropping the least recently hit, and counts them', () => {
    let evicted = 0;
    const store = new MemoryRateLimitStore(() => 1_000, {
      maxCounters: 1_000,
      onEvict: (n) => (evicted += n),
    });
    for (let i = 0; i < 5_000; i++) expect(store.hit(`attacker-${i}`, HOUR).allowed).toBe(true);
    expect(store.size).toBe(1_000);
    expect(evicted).toBe(4_000);
    // The newest 1,000 kept their counts; the oldest start again at 0.
    expect(store.hit('attacker-4999', HOUR).counts).toEqual([2]);
    expect(store.hit('attacker-0', HOUR).counts).toEqual([1]);
  });

  it('a bucket in use keeps its count through a flood of new buckets', () => {
    const store = new MemoryRateLimitStore(() => 1_000, { maxCounters: 1_000 });
    for (let i = 0; i < 5; i++) expect(store.hit('steady-client', HOUR).allowed).toBe(true);
    for (let i = 0; i < 50_000; i++) {
      store.hit(`flood-${i}`, HOUR);
      // The client keeps asking (and is refused): its counter is never the least recently hit.
      if (i % 500 === 0) expect(store.hit('steady-client', HOUR).allowed).toBe(false);
    }
    expect(store.size).toBe(1_000);
    expect(store.hit('steady-client', HOUR)).toMatchObject({ allowed: false, counts: [5] });
  });

  it('expired counters make room without counting as evictions', () => {
    // The first hit at 1,500 sweeps and sets the next sweep for 2,500; the windows end at 2,000.
    let now = 1_500;
    let evicted = 0;
    const store = new MemoryRateLimitStore(() => now, { maxCounters: 100, onEvict: (n) => (evicted += n) });
    const SECOND = [{ seconds: 1, limit: 10 }];
    for (let i = 0; i < 100; i++) store.hit(`old-${i}`, SECOND);
    // Past the windows, before the next sweep: the old counters are expired but still held.
    now = 2_200;
    for (let i = 0; i < 100; i++) store.hit(`new-${i}`, SECOND);
    expect(store.size).toBe(100);
    expect(evicted).toBe(0);
    // And one live counter more is an eviction.
    store.hit('one-more', SECOND);
    expect(evicted).toBe(1);
  });

  it("through the data plane's stores: the default bound, evictions on sluice_store_evictions_total", async () => {
    const metrics = new Metrics({ processMetrics: false });
    const { log, lines } = capturedLog();
    const stores = new Stores(null, metrics, log);
    const store = stores.of(LOCAL_COUNTERS);
    expect(store.maxCounters).toBe(DEFAULT_MAX_COUNTERS);
    const made = DEFAULT_MAX_COUNTERS + 1_234;
    for (let i = 0; i < made; i++) store.hit(`b${i}`, HOUR);
    expect(store.size).toBe(DEFAULT_MAX_COUNTERS);
    expect(await metrics.registry.metrics()).toContain(
      'sluice_store_evictions_total{store="rate-limit"} 1234',
    );
    expect(
      lines().filter((l) => String(l.msg).startsWith('memory store full') && l.store === 'rate-limit'),
    ).toHaveLength(1);
    await stores.close();
  });
});
