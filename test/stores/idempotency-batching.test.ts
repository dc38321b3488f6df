/**
 * RedisIdempotencyStore sends the claims one process makes in one turn of the event loop as one
 * script call, and its completions likewise. These tests hold it to what it promises, on the
 * machine's Redis: one call per turn (at most 64 items), each item answered as a call of its own
 * would have been, in order (two claims on one key: the first claims, the second finds it), and
 * a failed call failing each of its items. (On a Cluster each record is a call of its own:
 * test/stores/redis-topologies.test.ts.)
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ClaimRequest, StoreUnavailableError } from '../../dataplane/stores/idempotency-store.ts';
import { createRedisClient, RedisCaller } from '../../dataplane/stores/redis-connection.ts';
import { RedisIdempotencyStore } from '../../dataplane/stores/redis-idempotency-store.ts';
import { dropPrefix, sharedRedisUrl, uniquePrefix } from '../helpers/redis.ts';

const prefix = uniquePrefix('idem-batch');
const calls: string[] = [];
let caller: RedisCaller<unknown>;
let store: RedisIdempotencyStore;

beforeAll(async () => {
  caller = new RedisCaller(createRedisClient(sharedRedisUrl), { observe: (op) => calls.push(op) });
  expect(await caller.ready(5_000)).toBe(true);
  store = new RedisIdempotencyStore(caller, prefix);
});
afterAll(async () => {
  await caller.close();
  await dropPrefix(sharedRedisUrl, prefix);
});

const claim = (id: string, owner = randomUUID(), fingerprint = 'fp'): ClaimRequest => ({
  id,
  fingerprint,
  owner,
  ttlMs: 60_000,
  leaseMs: 5_000,
});
const response = (body: Buffer | string, status = 201) => ({
  status,
  headers: [['content-type', 'application/json']] as [string, string][],
  body: Buffer.from(body),
  bodyOmitted: false,
});

describe('RedisIdempotencyStore batching', () => {
  it('30 claims in one turn: one Redis call, each claimed; their 30 completions: one call', async () => {
    const items = Array.from({ length: 30 }, () => ({ id: randomUUID(), owner: randomUUID() }));
    calls.length = 0;
    const claimed = await Promise.all(items.map((i) => store.claim(claim(i.id, i.owner))));
    expect(calls).toEqual(['claim']);
    expect(claimed).toEqual(Array(30).fill({ outcome: 'claimed' }));
    calls.length = 0;
    const done = await Promise.all(items.map((i) => store.complete(i.id, i.owner, response(i.id))));
    expect(calls).toEqual(['complete']);
    expect(done).toEqual(Array(30).fill(true));
    for (const i of items) {
      const r = await store.get(i.id);
      expect(r?.state).toBe('COMPLETED');
      expect(r?.response?.body.toString()).toBe(i.id);
    }
  });

  it('claims on one key in one turn are answered in order: the first claims, the others find it', async () => {
    const id = randomUUID();
    const first = randomUUID();
    calls.length = 0;
    const [a, b, c] = await Promise.all([
      store.claim(claim(id, first)),
      store.claim(claim(id)),
      store.claim(claim(id, randomUUID(), 'other-fp')),
    ]);
    expect(calls).toEqual(['claim']);
    expect(a).toEqual({ outcome: 'claimed' });
    for (const r of [b, c]) {
      expect(r.outcome).toBe('found');
      if (r.outcome !== 'found') continue;
      expect(r.record).toMatchObject({
        state: 'IN_PROGRESS',
        fingerprint: 'fp',
        leased: true,
        response: null,
      });
    }
    // Completed, then claimed again in one turn with a completion of a non-owner: in order.
    const late = randomUUID();
    const [mine, theirs] = await Promise.all([
      store.complete(id, first, response('{"ok":true}')),
      store.complete(id, late, response('{"late":true}')),
    ]);
    expect([mine, theirs]).toEqual([true, false]);
    const replay = await store.claim(claim(id));
    expect(replay.outcome === 'found' && replay.record.response?.body.toString()).toBe('{"ok":true}');
  });

  it('a batch with a binary body: every body stored as sent, text and bytes alike', async () => {
    const binary = Buffer.from([0xff, 0xfe, 0x00, 0x80, 0x41]);
    const items = [
      { id: randomUUID(), owner: randomUUID(), body: Buffer.from('text body') },
      { id: randomUUID(), owner: randomUUID(), body: binary },
      { id: randomUUID(), owner: randomUUID(), body: Buffer.alloc(0) },
    ];
    await Promise.all(items.map((i) => store.claim(claim(i.id, i.owner))));
    calls.length = 0;
    const done = await Promise.all(items.map((i) => store.complete(i.id, i.owner, response(i.body))));
    expect(calls).toEqual(['complete']);
    expect(done).toEqual([true, true, true]);
    for (const i of items) expect((await store.get(i.id))?.response?.body.equals(i.body)).toBe(true);
  });

  it('150 claims in one turn leave in calls of at most 64', async () => {
    calls.length = 0;
    const claimed = await Promise.all(Array.from({ length: 150 }, () => store.claim(claim(randomUUID()))));
    expect(calls).toEqual(['claim', 'claim', 'claim']);
    expect(claimed.every((r) => r.outcome === 'claimed')).toBe(true);
  });

  it('a call that fails fails each of its items with the store error', async () => {
    const down = new RedisCaller(createRedisClient(sharedRedisUrl));
    expect(await down.ready(5_000)).toBe(true);
    const gone = new RedisIdempotencyStore(down, prefix);
    await down.close();
    const results = await Promise.allSettled(
      Array.from({ length: 5 }, () => gone.claim(claim(randomUUID()))),
    );
    for (const r of results) {
      expect(r.status).toBe('rejected');
      if (r.status === 'rejected') expect(r.reason).toBeInstanceOf(StoreUnavailableError);
    }
  });
});
