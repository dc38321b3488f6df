/**
 * The proxy-cache's stores in one data plane: Redis when the data plane has one (shared by every
 * replica), and memory stores, one per bound (memory.maxBytes), shared by the plugins that use
 * that bound and kept across snapshots: a config push must not empty the cache. A memory store
 * is counted by the live plugins holding it (a new snapshot's plugins take it before the old
 * ones let go) and dropped when none does. The admin API's purge reaches all of them.
 */
import { MemoryCacheStore } from './cache-memory-store.ts';
import type { RedisCacheStore } from './cache-redis-store.ts';

export class CacheStores {
  readonly redis: RedisCacheStore | null;
  readonly #memory = new Map<number, { store: MemoryCacheStore; holders: number }>();

  constructor(redis: RedisCacheStore | null) {
    this.redis = redis;
  }

  /** The memory store of this bound; call `release` when the plugin is retired. */
  acquireMemory(maxBytes: number): { store: MemoryCacheStore; release: () => void } {
    let held = this.#memory.get(maxBytes);
    if (held === undefined) {
      held = { store: new MemoryCacheStore(maxBytes), holders: 0 };
      this.#memory.set(maxBytes, held);
    }
    held.holders++;
    const h = held;
    let released = false;
    return {
      store: h.store,
      release: () => {
        if (released) return;
        released = true;
        if (--h.holders === 0 && this.#memory.get(maxBytes) === h) this.#memory.delete(maxBytes);
      },
    };
  }

  /** Removes the entries whose key starts with `prefix`, everywhere; returns how many. */
  async purge(prefix: string): Promise<number> {
    let n = 0;
    for (const { store } of this.#memory.values()) n += await store.purge(prefix);
    if (this.redis !== null) n += await this.redis.purge(prefix);
    return n;
  }
}
