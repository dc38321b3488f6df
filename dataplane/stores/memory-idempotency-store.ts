/**
 * Idempotency records in this process (standalone mode, a pod without Redis, tests): the same
 * behaviour as the Redis store, so one suite tests both. Records expire by the injected clock,
 * checked on access and by a periodic sweep (spec §8 rule 1); nothing is shared between
 * processes.
 *
 * Bounded by bytes (an estimate of what a record holds in the heap): with the 24 h default TTL,
 * records kept until they expire grow with the rate of keyed requests until the process runs out
 * of memory (100 a second: ~5 GB a day), which loses every record at once and the requests in
 * flight with them. When a record does not fit, expired records go first, then the oldest
 * records no live execution holds (completed ones, lapsed leases), and `onEvict` is told how many
 * live records went: a retry of such a key executes again, as on another pod without Redis.
 */
import type {
  ClaimRequest,
  ClaimResult,
  IdempotencyRecord,
  IdempotencyStore,
  StoredResponse,
} from './idempotency-store.ts';

interface Entry {
  /** What the record holds, estimated (recordBytes). */
  bytes: number;
  state: IdempotencyRecord['state'];
  fingerprint: string;
  owner: string;
  createdAt: number;
  expiresAt: number;
  leaseUntil: number;
  response: StoredResponse | null;
}

/** The default bound: the proxy cache's memory store's too, both within the chart's 512Mi data plane. */
export const DEFAULT_MAX_BYTES = 64 * 1024 * 1024;

/**
 * What a record holds in V8's heap, roughly: its object, Map slot, id, fingerprint and owner
 * strings, then per stored header its pair and strings, and the body's bytes and Buffer. For a
 * record with five headers and a 137-byte body: 1,373 bytes estimated, 1,446 measured
 * (test/stores/memory-idempotency-bound.test.ts checks within 1.5×).
 */
const RECORD_BYTES = 450;
const HEADER_BYTES = 80;
const BODY_BYTES = 100;

function responseBytes(r: StoredResponse): number {
  let n = BODY_BYTES + r.body.length;
  for (const [name, value] of r.headers) n += HEADER_BYTES + name.length + value.length;
  return n;
}

export interface MemoryIdempotencyOptions {
  now?: () => number;
  sweepMs?: number;
  /** The bound of the records' estimated bytes (DEFAULT_MAX_BYTES). */
  maxBytes?: number;
  /** Live records dropped to stay within maxBytes, how many (each time some are). */
  onEvict?: (count: number) => void;
}

export class MemoryIdempotencyStore implements IdempotencyStore {
  readonly #entries = new Map<string, Entry>();
  readonly #now: () => number;
  readonly #sweeper: NodeJS.Timeout;
  readonly maxBytes: number;
  readonly #onEvict: (count: number) => void;
  #bytes = 0;

  constructor(opts: MemoryIdempotencyOptions = {}) {
    this.#now = opts.now ?? Date.now;
    this.maxBytes = opts.maxBytes ?? DEFAULT_MAX_BYTES;
    this.#onEvict = opts.onEvict ?? (() => {});
    this.#sweeper = setInterval(() => this.sweep(), opts.sweepMs ?? 60_000).unref();
  }

  /** Removes expired records; returns how many. */
  sweep(): number {
    const now = this.#now();
    let n = 0;
    for (const [id, e] of this.#entries) {
      if (e.expiresAt <= now) {
        this.#drop(id, e);
        n++;
      }
    }
    return n;
  }

  get size(): number {
    return this.#entries.size;
  }

  /** The records' estimated bytes. */
  get bytes(): number {
    return this.#bytes;
  }

  #drop(id: string, e: Entry): void {
    this.#entries.delete(id);
    this.#bytes -= e.bytes;
  }

  #grow(e: Entry, bytes: number): void {
    e.bytes += bytes;
    this.#bytes += bytes;
    if (this.#bytes > this.maxBytes) this.#fit(this.#now(), e);
  }

  /**
   * Drops records, oldest first (the Map keeps the order records were made), until the rest fit:
   * expired ones, then any that no live execution holds. One held by a live lease stays (its
   * execution would find no record to complete, and a retry meanwhile would run it twice): those
   * are as many as the requests in flight. So does `growing`, the record that grew (a response
   * as large as the bound stays; the others make room for it).
   */
  #fit(now: number, growing: Entry): void {
    let evicted = 0;
    for (const [id, e] of this.#entries) {
      if (this.#bytes <= this.maxBytes) break;
      const expired = e.expiresAt <= now;
      if (e === growing || (!expired && e.state === 'IN_PROGRESS' && e.leaseUntil > now)) continue;
      this.#drop(id, e);
      if (!expired) evicted++;
    }
    if (evicted > 0) this.#onEvict(evicted);
  }

  #live(id: string): Entry | undefined {
    const e = this.#entries.get(id);
    if (e !== undefined && e.expiresAt <= this.#now()) {
      this.#drop(id, e);
      return undefined;
    }
    return e;
  }

  async claim(req: ClaimRequest): Promise<ClaimResult> {
    const now = this.#now();
    const e = this.#live(req.id);
    if (e === undefined) {
      const made: Entry = {
        bytes: 0,
        state: 'IN_PROGRESS',
        fingerprint: req.fingerprint,
        owner: req.owner,
        createdAt: now,
        expiresAt: now + req.ttlMs,
        leaseUntil: now + req.leaseMs,
        response: null,
      };
      this.#entries.set(req.id, made);
      this.#grow(made, RECORD_BYTES + req.id.length + req.fingerprint.length + req.owner.length);
      return { outcome: 'claimed' };
    }
    if (e.state === 'IN_PROGRESS' && e.fingerprint === req.fingerprint && e.leaseUntil <= now) {
      e.owner = req.owner;
      e.leaseUntil = now + req.leaseMs;
      return { outcome: 'takeover' };
    }
    return { outcome: 'found', record: this.#record(e, now) };
  }

  async renew(id: string, owner: string, leaseMs: number): Promise<boolean> {
    const e = this.#live(id);
    if (e?.owner !== owner || e.state !== 'IN_PROGRESS') return false;
    e.leaseUntil = this.#now() + leaseMs;
    return true;
  }

  async complete(id: string, owner: string, response: StoredResponse): Promise<boolean> {
    const e = this.#live(id);
    if (e?.owner !== owner) return false;
    const previous = e.response;
    e.state = 'COMPLETED';
    e.response = {
      ...response,
      headers: response.headers.map(([n, v]) => [n, v]),
      body: Buffer.from(response.body),
    };
    e.leaseUntil = 0;
    this.#grow(e, responseBytes(e.response) - (previous === null ? 0 : responseBytes(previous)));
    return true;
  }

  async release(id: string, owner: string): Promise<void> {
    const e = this.#live(id);
    if (e?.owner === owner && e.state === 'IN_PROGRESS') this.#drop(id, e);
  }

  async get(id: string): Promise<IdempotencyRecord | null> {
    const e = this.#live(id);
    return e === undefined ? null : this.#record(e, this.#now());
  }

  #record(e: Entry, now: number): IdempotencyRecord {
    return {
      state: e.state,
      fingerprint: e.fingerprint,
      createdAt: e.createdAt,
      response: e.response,
      leased: e.state === 'IN_PROGRESS' && e.leaseUntil > now,
    };
  }

  async close(): Promise<void> {
    clearInterval(this.#sweeper);
  }
}
