/**
 * The retry budget on its own, on a fake clock: over the last 10 s (1 s slots), retries may
 * number minPerSecond × 10 + budgetPercent % of the requests, as Linkerd's budget allows.
 */
import { describe, expect, it } from 'vitest';
import { RetryBudget } from '../../dataplane/upstream/retry-budget.ts';

/** A budget on a clock the test moves, starting at `start` ms. */
function budget(percent: number, minPerSecond: number, start = 1_000_000) {
  const clock = { now: start };
  const b = new RetryBudget(percent, minPerSecond, () => clock.now);
  const requests = (n: number) => {
    for (let i = 0; i < n; i++) b.request();
  };
  /** Retries taken, trying up to `n`. */
  const take = (n: number) => {
    let taken = 0;
    for (let i = 0; i < n; i++) if (b.take()) taken++;
    return taken;
  };
  return { clock, requests, take };
}

describe('retry budget', () => {
  it('without traffic, the reserve alone: minPerSecond × 10 retries in the window', () => {
    const b = budget(20, 10);
    expect(b.take(1000)).toBe(100);
    const one = budget(20, 1);
    expect(one.take(1000)).toBe(10);
  });

  it('a route with 1 request a second gets its retries: 10 requests and 3 retries each fit the default', () => {
    const b = budget(20, 10);
    let refused = 0;
    for (let s = 0; s < 10; s++) {
      b.requests(1);
      refused += 3 - b.take(3);
      b.clock.now += 1_000;
    }
    expect(refused).toBe(0);
  });

  it('the share: budgetPercent of the requests in the window, rounded down, on top of the reserve', () => {
    const b = budget(20, 0);
    expect(b.take(1)).toBe(0);
    b.requests(14);
    expect(b.take(10)).toBe(2); // 20 % of 14 is 2.8
    b.requests(1);
    expect(b.take(10)).toBe(1); // of 15: 3
    const both = budget(20, 1);
    both.requests(50);
    expect(both.take(1000)).toBe(10 + 10);
  });

  it('none at all with a zero share and a zero minimum', () => {
    const b = budget(0, 0);
    b.requests(1000);
    expect(b.take(10)).toBe(0);
  });

  it('the window slides in 1 s slots: retries and requests stop counting 10 s after their slot began', () => {
    const b = budget(0, 1, 0);
    b.clock.now = 500;
    expect(b.take(4)).toBe(4); // slot 0
    b.clock.now = 3_000;
    expect(b.take(10)).toBe(6); // slot 3: the window's 10 are used up
    b.clock.now = 9_999;
    expect(b.take(1)).toBe(0); // slot 9: slot 0 still counts
    b.clock.now = 10_000;
    expect(b.take(10)).toBe(4); // slot 10: slot 0's 4 are back, slot 3's 6 are not
    b.clock.now = 13_000;
    expect(b.take(10)).toBe(6); // slot 13: slot 3's are back too

    const share = budget(50, 0, 0);
    share.requests(4);
    share.clock.now = 9_999;
    expect(share.take(10)).toBe(2);
    share.clock.now = 10_000;
    share.requests(2);
    expect(share.take(10)).toBe(0); // only the 2 new requests count: room for 1, and 2 taken in the window
    share.clock.now = 19_999;
    expect(share.take(10)).toBe(1); // the retries of slot 9 are gone, the 2 requests of slot 10 still count
  });

  it('a pause longer than the window starts afresh', () => {
    const b = budget(20, 1, 0);
    b.requests(100);
    expect(b.take(100)).toBe(30);
    b.clock.now += 60_000;
    expect(b.take(100)).toBe(10);
  });

  it('a clock that goes back keeps counting in the current slot', () => {
    const b = budget(0, 1, 5_000);
    expect(b.take(5)).toBe(5);
    b.clock.now = 1_000;
    expect(b.take(10)).toBe(5);
  });

  it('at real traffic retries add the share and little more: never a multiple of the load', () => {
    // A failing upstream at 200 requests a second for a minute, every request retried up to 3 times.
    const b = budget(20, 10, 0);
    let requests = 0;
    let retries = 0;
    for (let ms = 0; ms < 60_000; ms += 5) {
      b.clock.now = ms;
      b.requests(1);
      requests++;
      retries += b.take(3);
    }
    // Each 10 s: the reserve of 100 and 20 % of 2000 requests. 1.25× the load, where attempts alone would allow 4×.
    expect([requests, retries]).toEqual([12_000, 6 * (100 + 400)]);
    expect((requests + retries) / requests).toBe(1.25);
  });
});
