/**
 * The balancer's choices on plain lists (balancer.ts): the properties the data-plane tests
 * (balancing.test.ts) sample, checked here over many values.
 */
import { describe, expect, it } from 'vitest';
import { Balancer, cookieValue, hash32 } from '../../dataplane/upstream/balancer.ts';

const endpoints = (n: number) =>
  Array.from({ length: n }, (_, i) => ({
    key: `10.0.0.${i}:80`,
    seed: hash32(`10.0.0.${i}:80`),
    inFlight: 0,
  }));

describe('rendezvous hashing', () => {
  const hashing = new Balancer({ policy: 'consistent-hash', hashOn: { header: 'x-user' } });
  const values = Array.from({ length: 10_000 }, (_, i) => `user-${i}`);
  const place = (list: ReturnType<typeof endpoints>) =>
    values.map((v) => hashing.pick(list, { 'x-user': v }, null)!.key);

  it('spreads values evenly, and removing an endpoint moves only the values it had', () => {
    const all = endpoints(5);
    const before = place(all);
    for (const e of all) {
      const share = before.filter((k) => k === e.key).length;
      expect(share).toBeGreaterThan(1_800); // 2,000 each expected
      expect(share).toBeLessThan(2_200);
    }
    const after = place(all.filter((_, i) => i !== 2));
    values.forEach((_, i) => {
      if (before[i] !== all[2].key) expect(after[i]).toBe(before[i]);
      else expect(after[i]).not.toBe(all[2].key);
    });
  });

  it('an endpoint that joins takes only values it now wins (about its share)', () => {
    const four = endpoints(4);
    const five = endpoints(5);
    const before = place(four);
    const after = place(five);
    let moved = 0;
    values.forEach((_, i) => {
      if (after[i] !== before[i]) {
        expect(after[i]).toBe(five[4].key);
        moved++;
      }
    });
    expect(moved).toBeGreaterThan(1_800);
    expect(moved).toBeLessThan(2_200);
  });

  it('a retry (avoid) takes the value’s second choice, the one it would get without the first', () => {
    const list = endpoints(4);
    for (const v of values.slice(0, 500)) {
      const first = hashing.pick(list, { 'x-user': v }, null)!;
      const second = hashing.pick(list, { 'x-user': v }, first)!;
      const without = hashing.pick(
        list.filter((e) => e !== first),
        { 'x-user': v },
        null,
      );
      expect(second).toBe(without);
    }
  });
});

describe('round robin and least-request', () => {
  it('round robin takes each in turn; a retry skips the endpoint it just tried', () => {
    const rr = new Balancer(undefined);
    const list = endpoints(3);
    const keys = Array.from({ length: 6 }, () => rr.pick(list, {}, null)!.key.slice(7, 8));
    expect(keys.join('')).toBe('012012');
    expect(rr.pick(list, {}, list[0])).toBe(list[1]);
  });

  it('least-request takes the fewest in flight, ties in turn, never the avoided one', () => {
    const lr = new Balancer({ policy: 'least-request' });
    const list = endpoints(3);
    list[0].inFlight = 2;
    list[1].inFlight = 1;
    list[2].inFlight = 1;
    const picks = Array.from({ length: 4 }, () => lr.pick(list, {}, null));
    expect(picks).toEqual([list[1], list[1], list[2], list[1]]);
    expect(lr.pick(list, {}, list[1])).toBe(list[2]);
    list[2].inFlight = 0;
    expect(lr.pick(list, {}, list[2])).toBe(list[1]);
  });

  it('an empty list picks nothing; one endpoint is always it, avoided or not', () => {
    const rr = new Balancer(undefined);
    expect(rr.pick([], {}, null)).toBeNull();
    const one = endpoints(1);
    expect(rr.pick(one, {}, one[0])).toBe(one[0]);
  });
});

describe('cookieValue', () => {
  it('finds a cookie by its exact name among others, trimmed', () => {
    expect(cookieValue('a=1; session=xyz; b=2', 'session')).toBe('xyz');
    expect(cookieValue('session=first;session=second', 'session')).toBe('first');
    expect(cookieValue('mysession=1; session2=2', 'session')).toBeUndefined();
    expect(cookieValue('flag; session=v=1', 'session')).toBe('v=1');
    expect(cookieValue(undefined, 'session')).toBeUndefined();
    expect(cookieValue(' session = a=b ', 'session')).toBe('a=b');
    expect(cookieValue('session=', 'session')).toBe('');
  });
});
