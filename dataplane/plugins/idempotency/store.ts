/** The idempotency records: in Redis (shared by every replica, Lua scripts) or in this process's memory. */
import type { IdempotencyStore } from '../../stores/idempotency-store.ts';
import { MemoryIdempotencyStore } from '../../stores/memory-idempotency-store.ts';
import { RedisIdempotencyStore } from '../../stores/redis-idempotency-store.ts';
import { storeKind } from '../../stores/store-kind.ts';

export const RECORDS = storeKind<IdempotencyStore>({
  name: 'idempotency records',
  memory: (stores) =>
    new MemoryIdempotencyStore({ onEvict: (count) => stores.evicted('idempotency', count) }),
  redis: (r) => new RedisIdempotencyStore(r.caller, `${r.prefix}idem:`),
  close: (s) => s.close(),
});
