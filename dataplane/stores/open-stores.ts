/**
 * The stores a data plane runs with: Redis when a URL is given (shared by every replica),
 * otherwise in memory (standalone mode: one process, nothing shared, nothing kept).
 */
import type { Logger } from 'pino';
import type { Metrics } from '../observability/metrics.ts';
import { CacheStores } from './cache-stores.ts';
import { RedisCacheStore, defineCacheScripts } from './cache-redis-store.ts';
import type { IdempotencyStore } from './idempotency-store.ts';
import { MemoryIdempotencyStore } from './memory-idempotency-store.ts';
import { RedisCaller, createRedisClient } from './redis-connection.ts';
import { RedisIdempotencyStore, defineIdempotencyScripts } from './redis-idempotency-store.ts';
import { MemoryRateLimitStore, type RateLimitStore } from './rate-limit-store.ts';
import { RedisRateLimitStore, defineRateLimitScripts } from './redis-rate-limit-store.ts';

export interface Stores {
  kind: 'redis' | 'memory';
  idempotency: IdempotencyStore;
  /** Counters shared by every replica (Redis), or this process's when there is no Redis. */
  rateLimit: RateLimitStore;
  /** This process's counters: policy local, and the fail-open fallback. */
  rateLimitLocal: MemoryRateLimitStore;
  /** proxy-cache: memory per plugin, and Redis when there is one. */
  cache: CacheStores;
  close(): Promise<void>;
}

export interface StoreOptions {
  redisUrl: string | null;
  redisTimeoutMs: number;
  redisPrefix: string;
}

export async function openStores(o: StoreOptions, metrics: Metrics, log: Logger): Promise<Stores> {
  if (o.redisUrl === null) {
    const idempotency = new MemoryIdempotencyStore();
    const local = new MemoryRateLimitStore();
    return {
      kind: 'memory',
      idempotency,
      rateLimit: local,
      rateLimitLocal: local,
      cache: new CacheStores(null),
      close: () => idempotency.close(),
    };
  }
  const client = createRedisClient(o.redisUrl);
  defineIdempotencyScripts(client);
  defineRateLimitScripts(client);
  defineCacheScripts(client);
  const caller = new RedisCaller(client, {
    timeoutMs: o.redisTimeoutMs,
    observe: (op, seconds, ok) => metrics.storeOperation('redis', op, seconds, ok),
    // Once per change of a node's state (RedisCaller): not at every reconnect attempt.
    onError: (err, node) => log.warn({ err: err.message, node }, 'redis'),
    onRecover: (node) => log.info({ node }, 'redis answers again'),
  });
  client.once('ready', () => log.info('redis connected'));
  if (!(await caller.ready(5_000)))
    log.warn('redis is not reachable yet: idempotent requests get 503 until it is; other routes are served');
  const idempotency = new RedisIdempotencyStore(caller, `${o.redisPrefix}idem:`);
  const rateLimit = new RedisRateLimitStore(caller, `${o.redisPrefix}rl:`);
  return {
    kind: 'redis',
    idempotency,
    rateLimit,
    rateLimitLocal: new MemoryRateLimitStore(),
    cache: new CacheStores(new RedisCacheStore(caller, `${o.redisPrefix}cache:`)),
    close: () => caller.close(),
  };
}
