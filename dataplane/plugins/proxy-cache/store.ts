/** The proxy-cache's entries: memory stores per bound, and Redis when the data plane has one (cache-stores.ts). */
import { CacheStores } from '../../stores/cache-stores.ts';
import { RedisCacheStore } from '../../stores/cache-redis-store.ts';
import { storeKind } from '../../stores/store-kind.ts';

export const CACHE = storeKind<CacheStores>({
  name: 'proxy-cache entries',
  memory: () => new CacheStores(null),
  redis: (r) => new CacheStores(new RedisCacheStore(r.caller, `${r.prefix}cache:`)),
  // DELETE /cache on the admin port.
  purge: (s, prefix) => s.purge(prefix),
});
