/**
 * The fault tests' private redis-server (test/helpers/redis.ts): the server a test gets is the
 * one it started, never another process's that answers on the same port.
 */
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { type PrivateRedis, startPrivateRedis } from '../helpers/redis.ts';

const started: PrivateRedis[] = [];
afterAll(async () => {
  await Promise.all(started.map((r) => r.stop()));
});

async function pidOf(port: number): Promise<string | undefined> {
  const r = new Redis({ port, lazyConnect: true });
  try {
    await r.connect();
    return /process_id:(\d+)/.exec(await r.info('server'))?.[1];
  } finally {
    r.disconnect();
  }
}

describe('startPrivateRedis', () => {
  it('answers with the server it started, on a port of its own', async () => {
    const [a, b] = await Promise.all([startPrivateRedis(), startPrivateRedis()]);
    started.push(a, b);
    expect(a.port).not.toBe(b.port);
    expect(await pidOf(a.port)).toBe(String(a.process.pid));
    expect(await pidOf(b.port)).toBe(String(b.process.pid));
  });

  it("refuses a named port another process's server holds, naming the race, and leaves that server be", async () => {
    const theirs = await startPrivateRedis();
    started.push(theirs);
    await expect(startPrivateRedis([], theirs.port)).rejects.toThrow(
      `redis-server on port ${theirs.port} is another process's (pid ${theirs.process.pid}`,
    );
    expect(await pidOf(theirs.port)).toBe(String(theirs.process.pid));
  });
});
