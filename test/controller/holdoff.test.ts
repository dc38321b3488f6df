/**
 * The rebuild holdoff (controller/holdoff.ts) on a fake clock: a change after a quiet spell at
 * once, a burst 100 ms after its last change, at most 1 s after its first.
 */
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
    this.t = Math.max(this.t, end); // a callback may have moved it on (a long build)
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

  it('fires a lone change at once, with the changes of the same turn', () => {
    const { clock, fired, h } = setup();
    h.start();
    fired.length = 0;
    clock.advance(100);
    h.changed();
    h.changed(); // delivered with it (one watch chunk): joins its firing
    expect(h.pending).toBe(true);
    clock.advance(0);
    expect(fired).toEqual([{ at: 1_100, since: 1_100 }]);
    expect(clock.live).toBe(0);
    clock.advance(5_000);
    expect(fired).toHaveLength(1);
  });

  it('fires a change 100 ms after another after 100 ms, a quiet spell, at once again', () => {
    const { clock, fired, h } = setup();
    h.start();
    fired.length = 0;
    clock.advance(100);
    h.changed();
    clock.advance(100);
    h.changed();
    clock.advance(0);
    expect(fired).toEqual([
      { at: 1_100, since: 1_100 },
      { at: 1_200, since: 1_200 },
    ]);
  });

  it('a change right after a long firing is no quiet spell: the changes queued during a build wait 100 ms', () => {
    const clock = new FakeClock();
    const fired: number[] = [];
    const h = new Holdoff(
      () => {
        fired.push(clock.now());
        clock.t += 800; // a build of 800 ms, the event loop blocked
      },
      { clock },
    );
    h.start(); // builds from 1_000 to 1_800
    fired.length = 0;
    clock.advance(500);
    h.changed();
    clock.advance(0); // fires at once (2_300), then the build runs until 3_100
    h.changed(); // delivered as the build ends: a burst, not a lone edit
    clock.advance(99);
    expect(fired).toEqual([2_300]);
    clock.advance(1);
    expect(fired).toEqual([2_300, 3_200]);
  });

  it('coalesces the rest of a burst into one firing, 100 ms after its last change', () => {
    const { clock, fired, h } = setup();
    h.start();
    fired.length = 0;
    clock.advance(100);
    for (let i = 0; i < 5; i++) {
      h.changed();
      clock.advance(60);
    }
    // The first change fired at once (nothing told it a burst would follow); the other four wait.
    expect(fired).toEqual([{ at: 1_100, since: 1_100 }]);
    clock.advance(40);
    expect(fired).toEqual([
      { at: 1_100, since: 1_100 },
      { at: 1_440, since: 1_160 },
    ]);
    expect(clock.live).toBe(0);
  });

  it('fires at most 1 s after the first change of an endless burst', () => {
    const { clock, fired, h } = setup();
    h.start();
    fired.length = 0;
    clock.advance(100);
    for (let i = 0; i < 40; i++) {
      h.changed();
      clock.advance(50);
    }
    expect(fired.map((f) => f.at - f.since)).toEqual([0, 1_000]);
    expect(fired[1]).toEqual({ at: 2_150, since: 1_150 });
  });

  it('takes its delays from the options', () => {
    const { clock, fired, h } = setup({ holdoffMs: 10, maxHoldoffMs: 25 });
    h.start();
    fired.length = 0;
    clock.advance(10);
    h.changed();
    clock.advance(0);
    h.changed();
    clock.advance(9);
    h.changed();
    clock.advance(9);
    h.changed();
    clock.advance(9);
    h.changed();
    clock.advance(7);
    expect(fired).toEqual([
      { at: 1_010, since: 1_010 },
      { at: 1_035, since: 1_010 },
    ]);
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
