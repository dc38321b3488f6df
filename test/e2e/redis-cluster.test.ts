/**
 * Shared state (rate limits, idempotency, proxy-cache) on a real Redis Cluster: 3 masters + 3
 * replicas started here (test/helpers/redis-cluster.ts), three gateways with a
 * redis-cluster:// URL. The tests are shared-state-suite.ts's, as on one Redis.
 */
import { afterAll, beforeAll } from 'vitest';
import { startRedisCluster, type TestRedisCluster } from '../helpers/redis-cluster.ts';
import { sharedStateSuite } from './shared-state-suite.ts';

let cluster: TestRedisCluster;
beforeAll(async () => {
  cluster = await startRedisCluster();
}, 60_000);
afterAll(async () => {
  await cluster?.stop();
});

sharedStateSuite('Redis Cluster (3 masters + 3 replicas)', () => cluster.url);
