/**
 * Shared state (rate limits, idempotency, proxy-cache) on one Redis (the tests' shared server,
 * keys under a prefix of their own): shared-state-suite.ts's tests, as on a Redis Cluster.
 */
import { afterAll } from 'vitest';
import { dropPrefix, sharedRedisUrl } from '../helpers/redis.ts';
import { sharedStateSuite } from './shared-state-suite.ts';

afterAll(async () => {
  await dropPrefix(sharedRedisUrl, 'sluice-test:shared-state:');
});

sharedStateSuite('one Redis', () => sharedRedisUrl);
