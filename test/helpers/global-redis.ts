/**
 * vitest globalSetup: a Redis for the tests that need one (`sharedRedisUrl`). When the configured
 * server (SLUICE_TEST_REDIS_URL, default redis://127.0.0.1:6379) answers PING it is used as is;
 * otherwise a private `redis-server` is started on a free port, its URL is exported to the test
 * workers (forked after this runs, they inherit process.env) and it is stopped at teardown. With
 * no `redis-server` installed the run stops at once with one line saying what to install.
 */
import { spawnSync } from 'node:child_process';
import { Redis } from 'ioredis';
import { defaultRedisUrl, startPrivateRedis } from './redis.ts';

const INSTALL =
  'The tests need redis-server (none answers at %URL% and none is installed): ' +
  'Debian/Ubuntu: sudo apt-get install redis-server; macOS: brew install redis';

async function answersPing(url: string): Promise<boolean> {
  const r = new Redis(url, {
    lazyConnect: true,
    retryStrategy: () => null,
    maxRetriesPerRequest: 0,
    connectTimeout: 1_000,
  });
  r.on('error', () => {}); // refused: the answer is "no"
  try {
    await r.connect();
    return (await r.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    r.disconnect();
  }
}

export default async function setup(): Promise<(() => Promise<void>) | undefined> {
  const url = process.env.SLUICE_TEST_REDIS_URL ?? defaultRedisUrl;
  if (await answersPing(url)) return undefined;
  if (spawnSync('redis-server', ['--version'], { stdio: 'ignore' }).error) {
    process.stderr.write(`${INSTALL.replace('%URL%', url)}\n`);
    process.exit(2);
  }
  const redis = await startPrivateRedis();
  process.env.SLUICE_TEST_REDIS_URL = redis.url;
  return () => redis.stop();
}
