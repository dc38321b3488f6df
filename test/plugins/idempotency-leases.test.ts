/**
 * The leases of running executions, renewed by one timer per plugin instance (leases.ts): each
 * renewed every third of its lease give or take a sixth, never near its end; none after its
 * execution ends; the timer gone once nothing runs. Real timers.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { type Held, Leases } from '../../dataplane/plugins/idempotency/leases.ts';

// Long enough that a loaded machine's late timers stay far from a lapse.
const LEASE = 300;

/** An execution that notes when it was held and renewed. */
function execution(): Held & { times: number[] } {
  const times = [performance.now()];
  return { due: 0, times, renew: () => times.push(performance.now()) };
}

const gaps = (times: number[]) => times.slice(1).map((t, i) => t - times[i]);

/**
 * The shortest gap allowed between two renewals: a third of the lease, less what a busy machine
 * may add between the timer's reading of the clock and the renewal's own (a process descheduled
 * there: seen 1.4 ms with three CPU hogs on two cores). Renewing at every tick would give a sixth.
 */
const MIN_GAP = LEASE / 3 - 10;

describe('one timer renews the leases of every running execution', () => {
  it('each lease is renewed after a third of it and well before its end, until the execution ends', async () => {
    const leases = new Leases(LEASE);
    const a = execution();
    leases.hold(a);
    await sleep(LEASE / 2);
    const b = execution();
    leases.hold(b);
    await sleep(LEASE * 4);
    for (const e of [a, b]) {
      expect(e.times.length).toBeGreaterThanOrEqual(5);
      for (const gap of gaps(e.times)) {
        expect(gap).toBeGreaterThanOrEqual(MIN_GAP);
        expect(gap).toBeLessThan(LEASE);
      }
    }
    leases.drop(a);
    const renewed = a.times.length;
    await sleep(LEASE);
    expect(a.times.length).toBe(renewed);
    expect(b.times.length).toBeGreaterThan(renewed - 2);
    leases.drop(b);
  });

  it('a thousand executions: each renewed once a round, none twice in one tick', async () => {
    const leases = new Leases(LEASE);
    const all = Array.from({ length: 1000 }, execution);
    for (const e of all) leases.hold(e);
    await sleep(LEASE * 2);
    for (const e of all) {
      expect(e.times.length).toBeGreaterThanOrEqual(3);
      for (const gap of gaps(e.times)) expect(gap).toBeGreaterThanOrEqual(MIN_GAP);
    }
    for (const e of all) leases.drop(e);
    expect(leases.size).toBe(0);
  });

  it('idle means idle: the timer stops at the first tick with nothing running, and starts again when needed', async () => {
    const leases = new Leases(LEASE);
    expect(leases.ticking).toBe(false);
    const e = execution();
    leases.hold(e);
    expect(leases.ticking).toBe(true);
    leases.drop(e);
    for (let waited = 0; leases.ticking && waited < 2_000; waited += 10) await sleep(10);
    expect(leases.ticking).toBe(false);
    expect(e.times).toHaveLength(1);
    const again = execution();
    leases.hold(again);
    await sleep(LEASE);
    expect(again.times.length).toBeGreaterThanOrEqual(2);
    leases.drop(again);
  });
});
