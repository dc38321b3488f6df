/**
 * RedisCaller, the deadline around every Redis call, against a private redis-server that the test
 * pauses (SIGSTOP): a call past its deadline fails once, is observed once, and still counts as in
 * flight until Redis answers, which is what bounds the commands queued on a stalled server.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { StoreUnavailableError } from '../../dataplane/stores/idempotency-store.ts';
import { createRedisClient, RedisCaller } from '../../dataplane/stores/redis-connection.ts';
import { type PrivateRedis, startPrivateRedis } from '../helpers/redis.ts';

let redis: PrivateRedis;
beforeAll(async () => {
  redis = await startPrivateRedis();
});
afterAll(async () => {
  await redis?.stop();
});

describe('RedisCaller', () => {
  it('observes a call past its deadline once, as failed, and counts it in flight until Redis answers', async () => {
    const seen: [string, boolean][] = [];
    const caller = new RedisCaller<{ ping(): Promise<string> }>(createRedisClient(redis.url), {
      timeoutMs: 150,
      observe: (op, _s, ok) => seen.push([op, ok]),
    });
    try {
      expect(await caller.ready(5_000)).toBe(true);
      await expect(caller.call('ping', (c) => c.ping())).resolves.toBe('PONG');
      expect(seen).toEqual([['ping', true]]);

      redis.pause();
      const late = caller.call('ping', (c) => c.ping());
      await expect(late).rejects.toBeInstanceOf(StoreUnavailableError);
      await expect(late).rejects.toMatchObject({ mayHaveApplied: true });
      expect(seen).toEqual([
        ['ping', true],
        ['ping', false],
      ]);
      expect(caller.inFlight).toBe(1);

      redis.resume();
      for (let i = 0; i < 100 && caller.inFlight > 0; i++) await new Promise((r) => setTimeout(r, 20));
      expect(caller.inFlight).toBe(0);
      // The late answer is not observed a second time (as a success).
      expect(seen).toHaveLength(2);
    } finally {
      redis.resume();
      await caller.close();
    }
  });

  it('sends the commands of one event-loop turn in one write, and each settles on its own reply', async () => {
    const caller = new RedisCaller<{
      set(k: string, v: string): Promise<string>;
      get(k: string): Promise<string | null>;
    }>(createRedisClient(redis.url));
    try {
      expect(await caller.ready(5_000)).toBe(true);
      const socket = (caller.client as unknown as { stream: import('node:net').Socket }).stream;
      let writes = 0;
      const counted = <F extends (...a: never[]) => unknown>(f: F) =>
        function (this: unknown, ...a: Parameters<F>) {
          writes++;
          return f.apply(this, a);
        };
      socket._write = counted(socket._write);
      socket._writev = counted(socket._writev!);
      const turn = await Promise.all(
        Array.from({ length: 40 }, (_, i) => caller.call('set', (c) => c.set(`batch:${i}`, String(i)))),
      );
      expect(turn).toEqual(Array(40).fill('OK'));
      expect(writes).toBe(1);
      // A later turn is a write of its own; values read back in order.
      const back = await Promise.all(
        Array.from({ length: 40 }, (_, i) => caller.call('get', (c) => c.get(`batch:${i}`))),
      );
      expect(back).toEqual(Array.from({ length: 40 }, (_, i) => String(i)));
      expect(writes).toBe(2);
    } finally {
      await caller.close();
    }
  });
});
