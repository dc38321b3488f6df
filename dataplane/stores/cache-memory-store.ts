/**
 * Cache entries in this process: a Map in recency order (a hit moves its key to the end), bounded
 * by bytes; the least recently used entries go first when a new one does not fit. Expired
 * entries are dropped when read. Synchronous: a hit costs no promise.
 */
import type { CacheEntry, CacheStore } from './cache-store.ts';

interface Slot {
  entry: CacheEntry;
  size: number;
  expiresAt: number;
}

export class MemoryCacheStore implements CacheStore {
  readonly kind = 'memory' as const;
  readonly maxBytes: number;
  readonly #slots = new Map<string, Slot>();
  readonly #now: () => number;
  #bytes = 0;

  constructor(maxBytes: number, now: () => number = Date.now) {
    this.maxBytes = maxBytes;
    this.#now = now;
  }

  get bytes(): number {
    return this.#bytes;
  }

  get size(): number {
    return this.#slots.size;
  }

  get(keys: readonly string[]): CacheEntry | null {
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i];
      const slot = this.#slots.get(key);
      if (slot === undefined) continue;
      this.#slots.delete(key);
      if (slot.expiresAt <= this.#now()) {
        this.#bytes -= slot.size;
        continue;
      }
      this.#slots.set(key, slot);
      return slot.entry;
    }
    return null;
  }

  set(key: string, entry: CacheEntry, ttlMs: number): void {
    const size = entry.body.length + 512;
    this.#remove(key);
    if (size > this.maxBytes) return;
    // Least recently used first: the Map iterates in insertion order, and a hit re-inserts.
    for (const [k, s] of this.#slots) {
      if (this.#bytes + size <= this.maxBytes) break;
      this.#slots.delete(k);
      this.#bytes -= s.size;
    }
    this.#slots.set(key, { entry, size, expiresAt: this.#now() + ttlMs });
    this.#bytes += size;
  }

  delete(keys: readonly string[]): void {
    for (const key of keys) this.#remove(key);
  }

  lock(): boolean {
    return true;
  }

  unlock(): void {}

  async purge(prefix: string): Promise<number> {
    let n = 0;
    for (const key of [...this.#slots.keys()]) {
      if (key.startsWith(prefix)) {
        this.#remove(key);
        n++;
      }
    }
    return n;
  }

  #remove(key: string): void {
    const old = this.#slots.get(key);
    if (old === undefined) return;
    this.#slots.delete(key);
    this.#bytes -= old.size;
  }
}
