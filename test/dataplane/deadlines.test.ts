/**
 * upstream/deadlines.ts on its own, with the real clock: the ticked list keeps its entries right
 * through disarming any of them, touching and re-arming; nothing expires early or twice.
 */
import { describe, expect, it } from 'vitest';
import { arm, disarm, Expiring, NATIVE_MS, TICK_MS, touch } from '../../dataplane/upstream/deadlines.ts';

class Probe extends Expiring {
  readonly armedAt = performance.now();
  expiredAt: number[] = [];
  expire(): void {
    this.expiredAt.push(performance.now() - this.armedAt);
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('deadlines', () => {
  it('long timeouts on the ticked list: disarmed ones never fire, touched ones move, none fires early or twice', async () => {
    const ms = NATIVE_MS + 100;
    const [a, b, c, d] = [new Probe(), new Probe(), new Probe(), new Probe()];
    for (const p of [a, b, c, d]) arm(p, ms);
    disarm(b); // the middle of the list
    disarm(d); // its head (last armed)
    disarm(d); // twice: nothing happens
    await sleep(600);
    touch(c, ms); // the countdown starts again
    await sleep(ms - 50);
    expect(c.expiredAt).toEqual([]); // touched at 600 ms: not due before 600 ms + ms
    // Due at the latest two ticks after its deadline.
    await sleep(50 + 2 * TICK_MS + 100);
    expect(a.expiredAt).toHaveLength(1);
    expect(a.expiredAt[0]).toBeGreaterThanOrEqual(ms);
    expect(c.expiredAt).toHaveLength(1);
    expect(c.expiredAt[0]).toBeGreaterThanOrEqual(600 + ms);
    expect(b.expiredAt).toEqual([]);
    expect(d.expiredAt).toEqual([]);
  });

  it('short timeouts are native timers: exact, refreshed by touch, cleared by disarm', async () => {
    const [a, b, c] = [new Probe(), new Probe(), new Probe()];
    arm(a, 400);
    arm(b, 400);
    arm(c, 400);
    disarm(b);
    await sleep(200);
    touch(c, 400); // now due at 600 ms
    await sleep(300);
    expect(a.expiredAt).toHaveLength(1);
    expect(a.expiredAt[0]).toBeGreaterThanOrEqual(399);
    expect(c.expiredAt).toEqual([]);
    await sleep(250);
    expect(c.expiredAt).toHaveLength(1);
    expect(c.expiredAt[0]).toBeGreaterThanOrEqual(599);
    expect(b.expiredAt).toEqual([]);
  });

  it('re-arming moves an entry from one kind to the other', async () => {
    const p = new Probe();
    arm(p, NATIVE_MS + 500);
    arm(p, 50); // off the list, onto a native timer
    await sleep(120);
    expect(p.expiredAt).toHaveLength(1);
    arm(p, 50);
    arm(p, NATIVE_MS + 500); // off the native timer
    await sleep(120);
    expect(p.expiredAt).toHaveLength(1);
    disarm(p);
  });
});
