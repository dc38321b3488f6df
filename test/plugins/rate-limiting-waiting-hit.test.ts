/**
 * rate-limiting's WaitingHit: the store's waiter and the chain runner's continuation in one
 * object. Held to its contract: an outcome applied before the chain resumes, a thrown outcome
 * becoming the chain's failure (never the store's), an answer told before `then` waiting for
 * it, and, on the machine's Redis, every waiter of one batch told although one outcome throws.
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { RequestContext } from '../../dataplane/pipeline/context.ts';
import { type HitOutcomes, WaitingHit } from '../../dataplane/plugins/rate-limiting/waiting-hit.ts';
import type { Decision, Window } from '../../dataplane/stores/rate-limit-store.ts';
import { createRedisClient, RedisCaller } from '../../dataplane/stores/redis-connection.ts';
import { RedisRateLimitStore } from '../../dataplane/stores/redis-rate-limit-store.ts';
import { dropPrefix, sharedRedisUrl, uniquePrefix } from '../helpers/redis.ts';

/** Only passed through to the outcomes: a request by its name. */
const request = (name: string) => ({ name }) as unknown as RequestContext;
const decision: Decision = { allowed: true, counts: [1], resets: [60] };

function recorder(throwOn?: string) {
  const log: string[] = [];
  const outcomes: HitOutcomes = {
    answered(ctx, d) {
      const name = (ctx as unknown as { name: string }).name;
      if (name === throwOn) throw new Error(`outcome of ${name}`);
      log.push(`${name} answered ${d.allowed} ${d.counts.join(',')}`);
    },
    unavailable(ctx, err, bucket) {
      log.push(
        `${(ctx as unknown as { name: string }).name} unavailable ${(err as Error).message} ${bucket}`,
      );
    },
  };
  const chain = (w: WaitingHit, name: string) =>
    w.then(
      () => log.push(`${name} resumed`),
      (err) => log.push(`${name} failed: ${(err as Error).message}`),
    );
  return { log, outcomes, chain };
}

describe('WaitingHit', () => {
  it('a decision: the outcome first, then the chain resumes', () => {
    const r = recorder();
    const w = new WaitingHit(request('a'), 'bucket', r.outcomes);
    r.chain(w, 'a');
    expect(r.log).toEqual([]);
    w.decided(decision);
    expect(r.log).toEqual(['a answered true 1', 'a resumed']);
  });

  it("the store's failure: the plugin's fallback (open or closed), then the chain resumes", () => {
    const r = recorder();
    const w = new WaitingHit(request('a'), 'bucket-1', r.outcomes);
    r.chain(w, 'a');
    w.failed(new Error('redis down'));
    expect(r.log).toEqual(['a unavailable redis down bucket-1', 'a resumed']);
  });

  it('an outcome that throws fails the chain (a 500 there), and does not resume it', () => {
    const r = recorder('a');
    const w = new WaitingHit(request('a'), 'bucket', r.outcomes);
    r.chain(w, 'a');
    expect(() => w.decided(decision)).not.toThrow();
    expect(r.log).toEqual(['a failed: outcome of a']);
  });

  it('an answer told before the chain runner called then waits for it', () => {
    const r = recorder();
    const w = new WaitingHit(request('a'), 'bucket', r.outcomes);
    w.decided(decision);
    expect(r.log).toEqual([]);
    r.chain(w, 'a');
    expect(r.log).toEqual(['a answered true 1', 'a resumed']);
  });
});

describe('WaitingHit on RedisRateLimitStore', () => {
  const prefix = uniquePrefix('rl-waiting');
  const caller = new RedisCaller(createRedisClient(sharedRedisUrl));
  afterAll(async () => {
    await caller.close();
    await dropPrefix(sharedRedisUrl, prefix);
  });

  it("one batch of three, the second's outcome throwing: all three told, in order, the second failed", async () => {
    expect(await caller.ready(5_000)).toBe(true);
    const store = new RedisRateLimitStore(caller, prefix);
    const windows: Window[] = [{ seconds: 3600, limit: 10 }];
    const r = recorder('b');
    for (const name of ['a', 'b', 'c']) {
      const w = new WaitingHit(request(name), 'bucket', r.outcomes);
      expect(store.hit('batch', windows, w)).toBeUndefined();
      r.chain(w, name);
    }
    await expect.poll(() => r.log.length, { timeout: 5_000 }).toBe(5);
    expect(r.log).toEqual([
      'a answered true 1',
      'a resumed',
      'b failed: outcome of b',
      'c answered true 3',
      'c resumed',
    ]);
  });
});
