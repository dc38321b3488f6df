/**
 * Shared state (rate limits, idempotency, proxy-cache) on a Redis found through a Sentinel
 * (redis-sentinel:// URL, test/helpers/redis-sentinel.ts): shared-state-suite.ts's tests, as on
 * one Redis and on a Redis Cluster.
 */
import { afterAll, beforeAll } from 'vitest';
import { startRedisSentinel, type TestRedisSentinel } from '../helpers/redis-sentinel.ts';
import { sharedStateSuite } from './shared-state-suite.ts';

let sentinel: TestRedisSentinel;
beforeAll(async () => {
  sentinel = await startRedisSentinel();
}, 30_000);
afterAll(async () => {
  await sentinel?.stop();
});

sharedStateSuite('Redis through a Sentinel', () => sentinel.url);
