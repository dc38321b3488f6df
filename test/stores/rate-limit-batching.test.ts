/**
 * RedisRateLimitStore sends the hits one process takes on a bucket in one turn of the event loop
 * as one script call. These tests hold it to what it promises, on the machine's Redis: one call
 * per batch, and decisions, counts and resets exactly those of the same hits sent one by one in
 * arrival order, also when two processes (two callers on one Redis) batch on the same bucket.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Decision, Window } from '../../dataplane/stores/rate-limit-store.ts';
import { createRedisClient, RedisCaller } from '../../dataplane/stores/redis-connection.ts';
import { RedisRateLimitStore } from '../../dataplane/stores/redis-rate-limit-store.ts';
import { dropPrefix, sharedRedisUrl, uniquePrefix } from '../helpers/redis.ts';

const prefix = uniquePrefix('rl-batch');
const calls: string[] = [];
const callers: RedisCaller<unknown>[] = [];

function store(): RedisRateLimitStore {
  const client = createRedisClient(sharedRedisUrl);
  const caller = new RedisCaller(client, { observe: (op) => calls.push(op) });
  callers.push(caller);
  return new RedisRateLimitStore(caller, prefix);
}

let a: RedisRateLimitStore;
let b: RedisRateLimitStore;
beforeAll(async () => {
  a = store();
  b = store();
  for (const c of callers) expect(await c.ready(5_000)).toBe(true);
});
afterAll(async () => {
  for (const c of callers) await c.close();
  await dropPrefix(sharedRedisUrl, prefix);
});

const hour: Window[] = [{ seconds: 3600, limit: 10 }];
/** One hit, its decision as a promise (the store tells a waiter). */
const hit = (store: RedisRateLimitStore, bucket: string, windows: Window[]) =>
  new Promise<Decision>((decided, failed) => store.hit(bucket, windows, { decided, failed }));
const allowed = (ds: Decision[]) => ds.map((d) => d.allowed);

describe('RedisRateLimitStore batching', () => {
  it('25 hits in one turn: one Redis call, the first 10 admitted, each seeing the count it would alone', async () => {
    calls.length = 0;
    const ds = await Promise.all(Array.from({ length: 25 }, () => hit(a, 'one-turn', hour)));
    expect(calls).toEqual(['rate_limit']);
    expect(allowed(ds)).toEqual([...Array(10).fill(true), ...Array(15).fill(false)]);
    expect(ds.map((d) => d.counts[0])).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, ...Array(15).fill(10)]);
    for (const d of ds) expect(d.resets[0]).toBeGreaterThan(0);
    for (const d of ds) expect(d.resets[0]).toBeLessThanOrEqual(3600);
  });

  it('a batch continues from the count earlier batches left, and a full window admits nothing', async () => {
    const first = await Promise.all(Array.from({ length: 4 }, () => hit(a, 'turns', hour)));
    expect(first.map((d) => d.counts[0])).toEqual([1, 2, 3, 4]);
    const second = await Promise.all(Array.from({ length: 8 }, () => hit(a, 'turns', hour)));
    expect(allowed(second)).toEqual([true, true, true, true, true, true, false, false]);
    expect(second.map((d) => d.counts[0])).toEqual([5, 6, 7, 8, 9, 10, 10, 10]);
    const third = await Promise.all(Array.from({ length: 3 }, () => hit(a, 'turns', hour)));
    expect(allowed(third)).toEqual([false, false, false]);
    expect(third.map((d) => d.counts[0])).toEqual([10, 10, 10]);
  });

  it('two windows: the fuller one bounds the batch, and refused hits count in neither', async () => {
    const two: Window[] = [
      { seconds: 3600, limit: 6 },
      { seconds: 86400, limit: 100 },
    ];
    await Promise.all(Array.from({ length: 2 }, () => hit(a, 'two', two)));
    const ds = await Promise.all(Array.from({ length: 7 }, () => hit(a, 'two', two)));
    expect(allowed(ds)).toEqual([true, true, true, true, false, false, false]);
    expect(ds.map((d) => d.counts)).toEqual([
      [3, 3],
      [4, 4],
      [5, 5],
      [6, 6],
      [6, 6],
      [6, 6],
      [6, 6],
    ]);
  });

  it('buckets and window sets are batched apart: one call each', async () => {
    calls.length = 0;
    const other: Window[] = [{ seconds: 3600, limit: 2 }];
    const [x, y, z] = await Promise.all([
      Promise.all(Array.from({ length: 3 }, () => hit(a, 'apart-x', hour))),
      Promise.all(Array.from({ length: 3 }, () => hit(a, 'apart-y', hour))),
      Promise.all(Array.from({ length: 3 }, () => hit(a, 'apart-z', other))),
    ]);
    expect(calls).toEqual(['rate_limit', 'rate_limit', 'rate_limit']);
    expect(allowed(x)).toEqual([true, true, true]);
    expect(allowed(y)).toEqual([true, true, true]);
    expect(allowed(z)).toEqual([true, true, false]);
  });

  it('two processes batching on one bucket admit exactly the limit between them', async () => {
    const limit: Window[] = [{ seconds: 3600, limit: 37 }];
    const ds: Decision[] = [];
    for (let turn = 0; turn < 6; turn++)
      ds.push(
        ...(await Promise.all([
          ...Array.from({ length: 5 }, () => hit(a, 'replicas', limit)),
          ...Array.from({ length: 4 }, () => hit(b, 'replicas', limit)),
        ])),
      );
    expect(ds.filter((d) => d.allowed)).toHaveLength(37);
    // Every admitted hit saw a distinct count: no count was given out twice.
    expect(new Set(ds.filter((d) => d.allowed).map((d) => d.counts[0])).size).toBe(37);
  });
});
