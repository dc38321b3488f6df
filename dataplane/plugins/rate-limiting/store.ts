/**
 * The rate-limit counters: this process's (policy local, and the fail-open fallback), and the
 * ones every replica shares (policy redis), exact or synced every syncMs, which without Redis are
 * this process's too.
 */
import { MemoryRateLimitStore, type RateLimitStore } from '../../stores/rate-limit-store.ts';
import { RedisRateLimitStore } from '../../stores/redis-rate-limit-store.ts';
import { type SyncedCounters, SyncedRateLimitStore } from '../../stores/synced-rate-limit-store.ts';
import { type StoreLookup, storeKind } from '../../stores/store-kind.ts';

/** This process's counters, bounded (DEFAULT_MAX_COUNTERS); the evictions counted and logged. */
const local = (stores: StoreLookup) =>
  new MemoryRateLimitStore(Date.now, { onEvict: (count) => stores.evicted('rate-limit', count) });

export const LOCAL_COUNTERS = storeKind<MemoryRateLimitStore>({
  name: 'rate-limit counters (this process)',
  memory: local,
  redis: (_, stores) => local(stores),
});

export const SHARED_COUNTERS = storeKind<RateLimitStore>({
  name: 'rate-limit counters (shared)',
  memory: (stores) => stores.of(LOCAL_COUNTERS),
  redis: (r) => new RedisRateLimitStore(r.caller, `${r.prefix}rl:`),
});

export const SYNCED_COUNTERS = storeKind<SyncedCounters>({
  name: 'rate-limit counters (shared, synced)',
  memory: (stores) => {
    const local = stores.of(LOCAL_COUNTERS);
    return { hit: (bucket, windows) => local.hit(bucket, windows) };
  },
  redis: (r) => new SyncedRateLimitStore(r.caller, `${r.prefix}rls:`),
  close: async (store) => {
    if (store instanceof SyncedRateLimitStore) await store.close();
  },
});
