/** The rebuild holdoff (controller/holdoff.ts) on a fake clock: 100 ms after the last change, at most 1 s after the first. */
import { describe, expect, it } from 'vitest';
import { type Clock, Holdoff } from '../../controller/holdoff.ts';

/** A clock whose time moves only when the test says so. */
class FakeClock implements Clock {
  t = 1_000;
  #timers: { at: number; fn: () => void; live: boolean }[] = [];
  now(): number {
    return this.t;
  }
  after(ms: number, fn: () => void): () => void {
    const timer = { at: this.t + ms, fn, live: true };
    this.#timers.push(timer);
    return () => {
      timer.live = false;
    };
  }
  advance(ms: number): void {
    const end = this.t + ms;
    for (;;) {
      const next = this.#timers.filter((x) => x.live && x.at <= end).sort((a, b) => a.at - b.at)[0];
      if (!next) break;
      this.t = next.at;
      next.live = false;
      next.fn();
    }
    this.t = end;
  }
  get live(): number {
    return this.#timers.filter((x) => x.live).length;
  }
}

function setup(o: { holdoffMs?: number; maxHoldoffMs?: number } = {}) {
  const clock = new FakeClock();
  const fired: { at: number; since: number }[] = [];
  const h = new Holdoff((since) => fired.push({ at: clock.now(), since }), { ...o, clock });
  return { clock, fired, h };
}

describe('Holdoff', () => {
  it('fires at start, with the time of a change noted before it', () => {
    const { clock, fired, h } = setup();
    h.changed();
    clock.advance(500);
    expect(fired).toEqual([]);
    h.start();
    expect(fired).toEqual([{ at: 1_500, since: 1_000 }]);
    expect(h.pending).toBe(false);
  });

  it('fires 100 ms after a lone change', () => {
    const { clock, fired, h } = setup();
    h.start();
    fired.length = 0;
    clock.advance(50);
    h.changed();
    clock.advance(99);
    expect(fired).toEqual([]);
    clock.advance(1);
    expect(fired).toEqual([{ at: 1_150, since: 1_050 }]);
  });

  it('coalesces a burst into one firing, 100 ms after the last change', () => {
    const { clock, fired, h } = setup();
    h.start();
    fired.length = 0;
    for (let i = 0; i < 5; i++) {
      h.changed();
      clock.advance(60);
    }
    expect(fired).toEqual([]);
    clock.advance(40);
    expect(fired).toEqual([{ at: 1_340, since: 1_000 }]);
    expect(clock.live).toBe(0);
  });

  it('fires at most 1 s after the first change of an endless burst', () => {
    const { clock, fired, h } = setup();
    h.start();
    fired.length = 0;
    for (let i = 0; i < 40; i++) {
      h.changed();
      clock.advance(50);
    }
    expect(fired.map((f) => f.at - f.since)).toEqual([1_000, 1_000]);
    expect(fired[0]).toEqual({ at: 2_000, since: 1_000 });
  });

  it('takes its delays from the options', () => {
    const { clock, fired, h } = setup({ holdoffMs: 10, maxHoldoffMs: 25 });
    h.start();
    fired.length = 0;
    h.changed();
    clock.advance(9);
    h.changed();
    clock.advance(9);
    h.changed();
    clock.advance(7);
    expect(fired).toEqual([{ at: 1_025, since: 1_000 }]);
  });

  it('stop() cancels a pending firing and later changes schedule nothing', () => {
    const { clock, fired, h } = setup();
    h.start();
    fired.length = 0;
    h.changed();
    expect(h.pending).toBe(true);
    h.stop();
    h.changed();
    clock.advance(5_000);
    expect(fired).toEqual([]);
    expect(clock.live).toBe(0);
  });
});
