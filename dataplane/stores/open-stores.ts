/**
 * The stores a data plane runs with: Redis when a URL is given (shared by every replica),
 * otherwise in memory (standalone mode: one process, nothing shared, nothing kept). Which
 * stores there are is the plugins' declaration (store-kind.ts); this file knows none of them.
 */
import type { Logger } from 'pino';
import type { Metrics } from '../observability/metrics.ts';
import { RedisCaller, createRedisClient } from './redis-connection.ts';
import type { RedisSide, StoreKind, StoreLookup } from './store-kind.ts';

/** A line about a store's evictions at most this often (the metric counts every one). */
const EVICTION_LOG_MS = 60_000;

export class Stores implements StoreLookup {
  readonly kind: 'redis' | 'memory';
  readonly #redis: RedisSide | null;
  readonly #metrics: Metrics | null;
  readonly #log: Logger | null;
  /** Every store made, by kind, in the order made. */
  readonly #made = new Map<StoreKind<unknown>, unknown>();
  /** Per store: evictions not yet logged, and when the last line was. */
  readonly #evictions = new Map<string, { count: number; loggedAt: number }>();

  /** `redis`: null for memory stores only. */
  constructor(redis: RedisSide | null = null, metrics: Metrics | null = null, log: Logger | null = null) {
    this.kind = redis === null ? 'memory' : 'redis';
    this.#redis = redis;
    this.#metrics = metrics;
    this.#log = log;
  }

  evicted(store: string, count: number): void {
    this.#metrics?.storeEvicted(store, count);
    const e = this.#evictions.get(store) ?? { count: 0, loggedAt: Number.NEGATIVE_INFINITY };
    e.count += count;
    this.#evictions.set(store, e);
    const now = Date.now();
    if (now - e.loggedAt < EVICTION_LOG_MS) return;
    this.#log?.warn(
      { store, evicted: e.count },
      'memory store full: live entries evicted to stay within its bound (an idempotency record: a retry of its key ' +
        'executes again; a rate-limit counter: its bucket counts from 0); give the data plane Redis (--redis) to keep them',
    );
    e.count = 0;
    e.loggedAt = now;
  }

  /** The store of this kind: made on first use (the data plane makes the declared ones at start), then kept. */
  of<S>(kind: StoreKind<S>): S {
    let s = this.#made.get(kind as StoreKind<unknown>) as S | undefined;
    if (s === undefined) {
      s = this.#redis === null ? kind.memory(this) : kind.redis(this.#redis, this);
      this.#made.set(kind as StoreKind<unknown>, s);
    }
    return s;
  }

  /** Removes the entries whose key starts with `prefix` from every store that can purge; how many. */
  async purge(prefix: string): Promise<number> {
    let n = 0;
    for (const [kind, store] of this.#made) if (kind.purge) n += await kind.purge(store, prefix);
    return n;
  }

  async close(): Promise<void> {
    for (const [kind, store] of this.#made) await kind.close?.(store);
    await this.#redis?.caller.close();
  }
}

export interface StoreOptions {
  redisUrl: string | null;
  redisTimeoutMs: number;
  redisPrefix: string;
}

/** The data plane's stores, with every declared kind made (the plugins' `stores`). */
export async function openStores(
  o: StoreOptions,
  metrics: Metrics,
  log: Logger,
  declared: Iterable<StoreKind<unknown>> = [],
): Promise<Stores> {
  if (o.redisUrl === null) return make(new Stores(null, metrics, log), declared);
  const client = createRedisClient(o.redisUrl);
  const caller = new RedisCaller(client, {
    timeoutMs: o.redisTimeoutMs,
    observe: (op, seconds, ok) => metrics.storeOperation('redis', op, seconds, ok),
    // Once per change of a node's state (RedisCaller): not at every reconnect attempt.
    onError: (err, node) => log.warn({ err: err.message, node }, 'redis'),
    onRecover: (node) => log.info({ node }, 'redis answers again'),
  });
  // Before the first command: each kind defines its scripts on the client.
  const stores = make(new Stores({ client, caller, prefix: o.redisPrefix }, metrics, log), declared);
  client.once('ready', () => log.info('redis connected'));
  if (!(await caller.ready(5_000)))
    log.warn('redis is not reachable yet: idempotent requests get 503 until it is; other routes are served');
  return stores;
}

function make(stores: Stores, declared: Iterable<StoreKind<unknown>>): Stores {
  for (const kind of declared) stores.of(kind);
  return stores;
}
