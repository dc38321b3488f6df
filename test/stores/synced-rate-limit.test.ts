/**
 * SyncedRateLimitStore (rate-limiting's syncMs) on a real Redis: hits are decided at once, with no
 * Redis call per hit; each replica adds its hits to Redis once per interval, learns the fleet's
 * total, and decides on it; nothing is sent while nothing is hit; a window's hits go to that
 * window's counter only; close() sends the last hits; and a failed sync makes hits fail (the
 * plugin then fails open or closed) until a sync succeeds again, with the hits admitted before the
 * failure still added to Redis.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import type { Decision, Window } from '../../dataplane/stores/rate-limit-store.ts';
import { createRedisClient, RedisCaller } from '../../dataplane/stores/redis-connection.ts';
import { SyncedRateLimitStore } from '../../dataplane/stores/synced-rate-limit-store.ts';
import {
  dropPrefix,
  type PrivateRedis,
  sharedRedisUrl,
  startPrivateRedis,
  uniquePrefix,
} from '../helpers/redis.ts';
import { waitFor } from '../helpers/until.ts';

const SYNC = 50;
const prefix = uniquePrefix('rl-sync');
const callers: RedisCaller<unknown>[] = [];
const redis = new Redis(sharedRedisUrl);
let redisOwn: PrivateRedis | undefined;

afterAll(async () => {
  for (const c of callers) await c.close();
  await dropPrefix(sharedRedisUrl, prefix);
  redis.disconnect();
  await redisOwn?.stop();
});

/** A replica's store on `url`; `calls` counts its Redis calls (ok or not). */
async function replica(url = sharedRedisUrl, now?: () => number) {
  const calls: boolean[] = [];
  const caller = new RedisCaller(createRedisClient(url), {
    timeoutMs: 300,
    observe: (_op, _s, ok) => calls.push(ok),
  });
  callers.push(caller);
  expect(await caller.ready(5_000)).toBe(true);
  return { store: new SyncedRateLimitStore(caller, prefix, now), calls, caller };
}

/** Polls (every 5 ms, up to 5 s) until `ok` holds; the error names `what`. */
const until = (what: string, ok: () => boolean) => waitFor(what, ok, Boolean, 5_000, 5);

const hour: Window[] = [{ seconds: 3600, limit: 10 }];
/** n hits; `replicas`: the replicas hint (1: a replica may take all the room between syncs). */
const hits = (
  store: SyncedRateLimitStore,
  bucket: string,
  windows: Window[],
  n: number,
  replicas = 1,
): Decision[] => Array.from({ length: n }, () => store.hit(bucket, windows, SYNC, replicas));
const admitted = (ds: Decision[]) => ds.filter((d) => d.allowed).length;
const counter = (bucket: string, w: Window, now = Date.now()) =>
  redis.get(`${prefix}{${bucket}}:${w.seconds}:${Math.floor(now / (w.seconds * 1000))}`);

describe('SyncedRateLimitStore', () => {
  it('decides 25 hits at once, with no Redis call, then adds the admitted ones in one call', async () => {
    const { store, calls } = await replica();
    const ds = hits(store, 'at-once', hour, 25);
    expect(ds.map((d) => d.allowed)).toEqual([...Array(10).fill(true), ...Array(15).fill(false)]);
    expect(ds.map((d) => d.counts[0])).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, ...Array(15).fill(10)]);
    for (const d of ds) expect(d.resets[0]).toBeGreaterThan(0);
    expect(calls).toEqual([]);
    await until('the sync', () => calls.length === 1);
    expect(calls).toEqual([true]);
    expect(await counter('at-once', hour[0])).toBe('10');
  });

  it('replicas learn each other’s counts at their syncs, and the fleet stops at the limit', async () => {
    const a = await replica();
    const b = await replica();
    expect(admitted(hits(a.store, 'fleet', hour, 6))).toBe(6);
    await until("a's sync", () => a.calls.length === 1);
    // b has not synced yet: it decides on its own hits only (the price of syncMs).
    expect(hits(b.store, 'fleet', hour, 1)[0].counts[0]).toBe(1);
    await until("b's sync", () => b.calls.length === 1);
    // Now b knows a's 6: 3 more fit.
    const ds = hits(b.store, 'fleet', hour, 5);
    expect(ds.map((d) => d.allowed)).toEqual([true, true, true, false, false]);
    expect(ds.map((d) => d.counts[0])).toEqual([8, 9, 10, 10, 10]);
    await until("b's second sync", () => b.calls.length === 2);
    expect(await counter('fleet', hour[0])).toBe('10');
    // a learns the total at its next sync, which its next hit (admitted on what it knew) sends.
    expect(hits(a.store, 'fleet', hour, 1)[0].allowed).toBe(true);
    await until("a's second sync", () => a.calls.length === 2);
    expect(hits(a.store, 'fleet', hour, 1)[0].allowed).toBe(false);
    expect(await counter('fleet', hour[0])).toBe('11');
  });

  it('between syncs each replica decides alone: with a hint of 1, two replicas at once admit the limit each', async () => {
    const a = await replica();
    const b = await replica();
    expect(admitted(hits(a.store, 'between', hour, 15)) + admitted(hits(b.store, 'between', hour, 15))).toBe(
      20,
    );
    await until('both syncs', () => a.calls.length === 1 && b.calls.length === 1);
    expect(await counter('between', hour[0])).toBe('20');
    expect(admitted(hits(a.store, 'between', hour, 3))).toBe(0);
  });

  it('with the hint right, each replica admits its share of the room between syncs', async () => {
    const a = await replica();
    const b = await replica();
    // Limit 10, 2 replicas: ⌈10 ÷ 2⌉ = 5 each before any sync; the fleet admits exactly 10.
    expect(admitted(hits(a.store, 'share', hour, 15, 2))).toBe(5);
    await until("a's sync", () => a.calls.length === 1);
    expect(admitted(hits(b.store, 'share', hour, 15, 2))).toBe(5);
    await until("b's sync", () => b.calls.length === 1);
    expect(await counter('share', hour[0])).toBe('10');
    // a synced first: it knows 5, not 10, so it admits its share of that room, ⌈5 ÷ 2⌉ = 3, over
    // the limit (the lag of one sync); its next sync tells it the rest.
    expect(admitted(hits(a.store, 'share', hour, 4, 2))).toBe(3);
    await until("a's second sync", () => a.calls.length === 2);
    expect(admitted(hits(a.store, 'share', hour, 3, 2))).toBe(0);
    expect(admitted(hits(b.store, 'share', hour, 3, 2))).toBe(0);
    expect(await counter('share', hour[0])).toBe('13');
    // A share is of the room left at the last sync: 3 taken, room 7, ⌈7 ÷ 2⌉ = 4 until the next.
    expect(admitted(hits(a.store, 'share-room', hour, 3, 2))).toBe(3);
    await until("a's sync", () => a.calls.length === 3);
    const ds = hits(a.store, 'share-room', hour, 6, 2);
    expect(ds.map((d) => d.allowed)).toEqual([true, true, true, true, false, false]);
    // Refused on its share, not on the window: the count is below the limit.
    expect(ds[5].counts[0]).toBe(7);
  });

  it('idle means idle: no call while nothing is hit, one per interval while hits come', async () => {
    const { store, calls } = await replica();
    await sleep(SYNC * 4);
    expect(calls).toEqual([]);
    const plenty: Window[] = [{ seconds: 3600, limit: 1_000_000 }];
    const end = Date.now() + SYNC * 10;
    while (Date.now() < end) {
      hits(store, 'steady', plenty, 10);
      await sleep(5);
    }
    await until('the last sync', () => !calls.includes(false) && calls.length > 0);
    await sleep(SYNC * 3);
    const n = calls.length;
    // ~10 intervals of hits: about one call per interval, never one per turn (~100 turns).
    expect(n).toBeGreaterThanOrEqual(5);
    expect(n).toBeLessThanOrEqual(14);
    await sleep(SYNC * 6);
    expect(calls.length).toBe(n);
  });

  it("a window's hits go to that window's counter; the next window starts at 0", async () => {
    let now = Math.floor(Date.now() / 60_000) * 60_000 + 1_000;
    const { store, calls } = await replica(sharedRedisUrl, () => now);
    const minute: Window[] = [{ seconds: 60, limit: 3 }];
    const first = hits(store, 'rollover', minute, 4);
    expect(first.map((d) => d.allowed)).toEqual([true, true, true, false]);
    expect(first[0].resets[0]).toBe(59);
    await until('the first sync', () => calls.length === 1);
    now += 60_000;
    const second = hits(store, 'rollover', minute, 4);
    expect(second.map((d) => d.allowed)).toEqual([true, true, true, false]);
    expect(second.map((d) => d.counts[0])).toEqual([1, 2, 3, 3]);
    await until('the second sync', () => calls.length === 2);
    expect(await counter('rollover', minute[0], now - 60_000)).toBe('3');
    expect(await counter('rollover', minute[0], now)).toBe('3');
    const ttl = await redis.pttl(`${prefix}{rollover}:60:${Math.floor(now / 60_000)}`);
    // The rest of the window by this clock (59 s) and a minute's grace for the replicas' clocks.
    expect(ttl).toBeGreaterThan(100_000);
    expect(ttl).toBeLessThanOrEqual(119_000);
  });

  it("a new snapshot's plugin with the same windows keeps what the bucket knows; other windows start afresh", async () => {
    const { store, calls } = await replica();
    expect(admitted(hits(store, 'snapshots', hour, 7))).toBe(7);
    await until('the sync', () => calls.length === 1);
    // The same windows in a new array (the plugin made again for a new snapshot): 3 left.
    const again: Window[] = [{ seconds: 3600, limit: 10 }];
    expect(admitted(hits(store, 'snapshots', again, 5))).toBe(3);
    // A new limit: a new bucket, which knows nothing until its first sync.
    const higher: Window[] = [{ seconds: 3600, limit: 12 }];
    expect(hits(store, 'snapshots', higher, 1)[0].counts[0]).toBe(1);
    // Both buckets are sent at the next sync: the old one's 3 hits, and the new one's.
    await until('the buckets’ syncs', () => calls.length === 3);
    expect(hits(store, 'snapshots', higher, 3).map((d) => d.allowed)).toEqual([true, false, false]);
  });

  it('past its bound of buckets, the idle ones are forgotten; below it, only ended windows', async () => {
    let now = Date.now();
    const caller = (await replica()).caller;
    const store = new SyncedRateLimitStore(caller, prefix, () => now, 50);
    for (let i = 0; i < 40; i++) store.hit(`few-${i}`, hour, SYNC, 1);
    // Synced (a bucket waiting for its sync is never dropped), then idle for 2 s.
    await sleep(SYNC * 3);
    now += 2_000;
    store.hit('few-last', hour, SYNC, 1);
    // 41 buckets, bound 50: the idle ones are kept (their windows run).
    expect(store.size).toBe(41);
    for (let i = 0; i < 80; i++) store.hit(`many-${i}`, hour, SYNC, 1);
    await sleep(SYNC * 3);
    now += 2_000;
    store.hit('few-last', hour, SYNC, 1);
    // 121 buckets, bound 50: every one idle for over a second is dropped; the one just hit is left.
    expect(store.size).toBe(1);
  });

  it('close() sends the hits not synced yet', async () => {
    const { store, calls } = await replica();
    expect(admitted(hits(store, 'closing', hour, 4))).toBe(4);
    expect(calls).toEqual([]);
    await store.close();
    expect(calls).toEqual([true]);
    expect(await counter('closing', hour[0])).toBe('4');
  });

  it('a sync past its deadline is not sent again, and the bucket, with nothing left to send, probes Redis until a sync succeeds', async () => {
    const own = await startPrivateRedis();
    try {
      const { store, calls } = await replica(own.url);
      expect(admitted(hits(store, 'stalled', hour, 2))).toBe(2);
      await until('the first sync', () => calls.length === 1);
      expect(admitted(hits(store, 'stalled', hour, 3))).toBe(3);
      own.pause();
      // The sync of those 3 is sent and outlives its deadline (300 ms): maybe applied, so counted
      // here and never sent again; this bucket has nothing left to send.
      await until('the sync to fail', () => calls.length === 2);
      expect(calls).toEqual([true, false]);
      expect(() => store.hit('stalled', hour, SYNC)).toThrow(/redis/i);
      own.resume();
      // Only the probes that failing hits ask for can clear the failure.
      const end = Date.now() + 5_000;
      while (calls.length === 2 || calls.at(-1) === false) {
        if (Date.now() > end) throw new Error('no sync went through after Redis went on');
        try {
          store.hit('stalled', hour, SYNC);
        } catch {}
        await sleep(SYNC);
      }
      const check = new Redis(own.url);
      try {
        // The stalled command was applied once Redis went on; nothing was added twice.
        expect(await check.get(`${prefix}{stalled}:3600:${Math.floor(Date.now() / 3_600_000)}`)).toBe('5');
      } finally {
        check.disconnect();
      }
      const d = store.hit('stalled', hour, SYNC);
      expect(d.allowed).toBe(true);
      expect(d.counts[0]).toBe(6);
    } finally {
      await own.stop();
    }
  });

  it('a failed sync makes hits fail until a sync succeeds; hits it could not send are sent then', async () => {
    redisOwn = await startPrivateRedis();
    const { store, calls, caller } = await replica(redisOwn.url);
    expect(admitted(hits(store, 'failing', hour, 2))).toBe(2);
    await until('the first sync', () => calls.length === 1);
    // (calls counts the calls sent: a call refused while Redis is not connected is not one.)
    await redisOwn.stop();
    // So that the sync is refused before it is sent (a command sent as the connection drops may
    // have been applied: those hits are counted here and not sent again).
    await until('the client to see Redis gone', () => caller.client.status !== 'ready');
    // Hits are admitted on what this replica knows until its sync fails; from then on they throw.
    let kept = 0;
    await until('a hit to throw', () => {
      try {
        if (store.hit('failing', hour, SYNC).allowed) kept++;
        return false;
      } catch (err) {
        expect(String(err)).toMatch(/redis/);
        return true;
      }
    });
    expect(kept).toBeGreaterThan(0);
    for (let i = 0; i < 3; i++) expect(() => store.hit('failing', hour, SYNC, 1)).toThrow(/redis/);
    // Redis is back (empty: it keeps nothing on disk); hits fail until a sync gets through (the
    // hits that throw ask for it; one may already have, while Redis started).
    const before = calls.length;
    redisOwn = await startPrivateRedis([], redisOwn.port);
    while (calls.length === before) {
      expect(() => store.hit('failing', hour, SYNC, 1)).toThrow(/redis/);
      await sleep(SYNC);
    }
    expect(calls.at(-1)).toBe(true);
    const check = new Redis(redisOwn.url);
    try {
      // The hits admitted but not sent were kept and added; the hits that failed were counted nowhere.
      expect(await check.get(`${prefix}{failing}:3600:${Math.floor(Date.now() / 3_600_000)}`)).toBe(
        String(kept),
      );
    } finally {
      check.disconnect();
    }
    const d = store.hit('failing', hour, SYNC);
    expect(d.allowed).toBe(true);
    expect(d.counts[0]).toBe(kept + 1);
  });
});
