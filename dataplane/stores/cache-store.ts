/**
 * The proxy-cache's entries (RFC 9111): one stored response per key, with the policy state of
 * http-cache-semantics (what it was stored for, when, its freshness), the status and the body.
 * The headers a hit sends come from the policy (policy.responseHeaders(): Age updated,
 * hop-by-hop dropped), so they are stored once, inside it.
 *
 * Two implementations: memory (one process, bounded, LRU by bytes) and Redis (shared by every
 * replica, one key per entry with its TTL, with a short single-key lock so concurrent misses
 * across replicas make one upstream call). The cache is an optimisation: every store failure
 * is reported to the caller, which then serves from the upstream (bypass), never an error.
 */
import CachePolicy from 'http-cache-semantics';

export interface CacheEntry {
  status: number;
  body: Buffer;
  policy: CachePolicy;
}

export interface CacheStore {
  readonly kind: 'memory' | 'redis';
  /** The first of `keys` that holds an entry (one round trip), or null. Memory answers synchronously. */
  get(keys: readonly string[]): CacheEntry | null | Promise<CacheEntry | null>;
  /** Stores (replaces) an entry, removed after ttlMs. */
  set(key: string, entry: CacheEntry, ttlMs: number): void | Promise<void>;
  /** Removes these entries (an unsafe request changed their resource, RFC 9111 §4.4). */
  delete(keys: readonly string[]): void | Promise<void>;
  /** Takes the miss lock of a key across replicas; true when this caller holds it (always, in memory). */
  lock(key: string, owner: string, ttlMs: number): boolean | Promise<boolean>;
  unlock(key: string, owner: string): void | Promise<void>;
  /** Removes every entry whose key starts with `prefix` ("" = all); returns how many. */
  purge(prefix: string): Promise<number>;
}

/**
 * A key is `<shared>` or `<shared>|c=<caller, URI-encoded>` (plugins/proxy-cache/key.ts builds
 * them): a caller's entry is keyed by the shared entry's key and its own part. The Redis store
 * keeps both under one hash tag, the shared part, so one request's keys share a Cluster slot.
 */
export const CALLER_PART = '|c=';

/** Where a key's caller part starts, or its length for a shared key (no `|` is encoded in a part after the path). */
export function callerPartAt(key: string): number {
  const i = key.lastIndexOf('|');
  return i >= 0 && key.startsWith('c=', i + 1) ? i : key.length;
}

/**
 * An entry as one Redis value: 4 bytes of policy-JSON length, the policy JSON (status inside),
 * then the body, so GET/MGET return it in one reply and nothing is base64'd.
 */
export function encodeEntry(entry: CacheEntry): Buffer {
  const meta = Buffer.from(JSON.stringify({ s: entry.status, p: entry.policy.toObject() }));
  const head = Buffer.allocUnsafe(4);
  head.writeUInt32BE(meta.length, 0);
  return Buffer.concat([head, meta, entry.body]);
}

export function decodeEntry(raw: Buffer): CacheEntry | null {
  if (raw.length < 4) return null;
  const n = raw.readUInt32BE(0);
  if (raw.length < 4 + n) return null;
  try {
    const meta = JSON.parse(raw.toString('utf8', 4, 4 + n)) as {
      s: number;
      p: CachePolicy.CachePolicyObject;
    };
    return { status: meta.s, policy: CachePolicy.fromObject(meta.p), body: raw.subarray(4 + n) };
  } catch {
    return null; // written by another version: a miss, overwritten by the next store
  }
}
