/**
 * Concurrent misses for one key make one upstream call. In a process: the first request is
 * the key's leader until its response closes (its entry is stored by then); the others wait for
 * it, at most lock.wait, then look the key up again. Across replicas (store redis): the leader
 * also takes the key's lock in Redis (single key, SET NX PX: see cache-redis-store.ts for why
 * not Redlock); a replica that finds it taken polls, 10 ms doubling to 100 ms, for a usable
 * entry or for the lock to be free again (its holder stored nothing usable: this request then
 * forwards as the new holder), so an uncacheable response never holds requests for lock.wait.
 */
import { randomUUID } from '../../observability/uuid.ts';
import { setTimeout as sleep } from 'node:timers/promises';
import type { RequestContext } from '../../pipeline/context.ts';
import type { CacheEntry, CacheStore } from '../../stores/cache-store.ts';
import type { Settings } from './settings.ts';

export class Coalescer {
  readonly #s: Settings;
  readonly #store: CacheStore;
  readonly #warn: (err: unknown) => void;
  /** The key's leader in this process: settles when its response closes. */
  readonly #inFlight = new Map<string, Promise<void>>();

  constructor(s: Settings, store: CacheStore, warn: (err: unknown) => void) {
    this.#s = s;
    this.#store = store;
    this.#warn = warn;
  }

  /** The miss of this key already running in this process, if any. */
  pending(key: string): Promise<void> | undefined {
    return this.#inFlight.get(key);
  }

  /** Waits for a pending miss, at most lock.wait. */
  async wait(pending: Promise<void>): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      pending,
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, this.#s.lockWaitMs);
      }),
    ]);
    clearTimeout(timer);
  }

  /** Makes this request the key's leader in this process until its response closes. */
  lead(ctx: RequestContext, key: string): void {
    let done!: () => void;
    const pending = new Promise<void>((resolve) => {
      done = resolve;
    });
    this.#inFlight.set(key, pending);
    ctx.res.once('close', () => {
      if (this.#inFlight.get(key) === pending) this.#inFlight.delete(key);
      done();
    });
  }

  /**
   * Across replicas: resolves null when this request holds the key's lock (released when its
   * response closes) or the wait is over — forward; or an entry another replica stored that
   * `usable` accepts. A store failure on reading rejects (the caller bypasses the cache).
   */
  async acquire(
    ctx: RequestContext,
    keys: string[],
    usable: (entry: CacheEntry) => boolean,
  ): Promise<CacheEntry | null> {
    const store = this.#store;
    const key = keys[0];
    const owner = randomUUID();
    const until = Date.now() + this.#s.lockWaitMs;
    for (let pause = 10; ; pause = Math.min(pause * 2, 100)) {
      let mine = true;
      try {
        mine = await store.lock(key, owner, this.#s.lockTtlMs);
      } catch (err) {
        this.#warn(err); // no lock to be had: forward (one more upstream call at worst)
      }
      if (mine) {
        ctx.res.once('close', () => {
          Promise.resolve()
            .then(() => store.unlock(key, owner))
            .catch(() => {}); // the lock lapses by itself
        });
        return null;
      }
      if (Date.now() >= until) return null;
      await sleep(Math.min(pause, Math.max(1, until - Date.now())));
      const found = await store.get(keys);
      if (found !== null && usable(found)) return found;
    }
  }
}
