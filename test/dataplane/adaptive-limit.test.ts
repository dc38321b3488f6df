/**
 * The adaptive concurrency limit's behaviour (server/adaptive-limit.ts), step by step on a
 * clock the test moves: it grows while latency stays at its floor and the limit is used, falls
 * when latency rises (requests queue), recovers when latency falls back, and keeps within its
 * bounds.
 */
import { describe, expect, it } from 'vitest';
import { AdaptiveLimit } from '../../dataplane/server/adaptive-limit.ts';

/** A limiter on a clock of its own; `windows(n, rtt, inFlight)` feeds n windows of 20 samples, 100 ms apart. */
function limiter(max = 10_000) {
  let now = 0;
  const l = new AdaptiveLimit(max, () => now);
  const windows = (n: number, rttMs: number, inFlight = l.limit) => {
    for (let w = 0; w < n; w++) {
      now += 100;
      for (let i = 0; i < 20; i++) l.sample(rttMs, inFlight);
    }
    return l.limit;
  };
  return { l, windows, advance: (ms: number) => (now += ms) };
}

describe('the adaptive concurrency limit', () => {
  it('starts at 100 and grows while latency stays at its floor and the limit is used', () => {
    const { l, windows } = limiter();
    expect(l.limit).toBe(100);
    const after = windows(50, 10);
    expect(after).toBeGreaterThan(150);
  });

  it('does not grow a limit nobody uses (fewer than half of it in flight)', () => {
    const { windows } = limiter();
    expect(windows(50, 10, 20)).toBe(100);
  });

  it('falls when latency rises, and recovers when it falls back', () => {
    const { windows } = limiter();
    const grown = windows(40, 10);
    // Requests queue: latency four times the floor.
    const fallen = windows(20, 40);
    expect(fallen).toBeLessThan(grown / 2);
    // Latency back at its floor: the limit climbs again.
    const recovered = windows(60, 10);
    expect(recovered).toBeGreaterThan(fallen * 1.5);
  });

  it('tolerates latency up to 1.5× the floor (jitter does not shed)', () => {
    const { windows } = limiter();
    const base = windows(20, 10);
    expect(windows(20, 14)).toBeGreaterThanOrEqual(base);
  });

  it('stays within 10 and the fixed limit', () => {
    const low = limiter();
    low.windows(5, 10);
    expect(low.windows(200, 1_000)).toBe(10);
    const high = limiter(120);
    expect(high.windows(500, 10)).toBe(120);
  });

  it('waits for enough samples: one slow request does not move it', () => {
    const { l, windows, advance } = limiter();
    windows(10, 10);
    const before = l.limit;
    advance(1_000);
    for (let i = 0; i < 5; i++) l.sample(5_000, before);
    expect(l.limit).toBe(before);
  });

  it('follows a floor that moved up for good within two periods (30 s each)', () => {
    const { windows } = limiter();
    windows(20, 10);
    // The upstream is now slower for good (50 ms): at first that reads as queueing…
    const fallen = windows(20, 50);
    expect(fallen).toBeLessThan(60);
    // …but after two periods 50 ms is the floor, and the limit grows again.
    windows(600, 50);
    const before = windows(1, 50);
    expect(windows(50, 50)).toBeGreaterThan(before);
  });
});
