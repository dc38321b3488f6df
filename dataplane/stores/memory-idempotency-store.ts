/**
 * Idempotency records in this process (standalone mode, tests): the same behaviour as the
 * Redis store, so one suite tests both. Records expire by the injected clock, checked on
 * access and by a periodic sweep (spec §8 rule 1); nothing is shared between processes.
 */
import type {
  ClaimRequest,
  ClaimResult,
  IdempotencyRecord,
  IdempotencyStore,
  StoredResponse,
} from './idempotency-store.ts';

interface Entry {
  state: IdempotencyRecord['state'];
  fingerprint: string;
  owner: string;
  createdAt: number;
  expiresAt: number;
  leaseUntil: number;
  response: StoredResponse | null;
}

export class MemoryIdempotencyStore implements IdempotencyStore {
  readonly #entries = new Map<string, Entry>();
  readonly #now: () => number;
  readonly #sweeper: NodeJS.Timeout;

  constructor(opts: { now?: () => number; sweepMs?: number } = {}) {
    this.#now = opts.now ?? Date.now;
    this.#sweeper = setInterval(() => this.sweep(), opts.sweepMs ?? 60_000).unref();
  }

  /** Removes expired records; returns how many. */
  sweep(): number {
    const now = this.#now();
    let n = 0;
    for (const [id, e] of this.#entries) {
      if (e.expiresAt <= now) {
        this.#entries.delete(id);
        n++;
      }
    }
    return n;
  }

  get size(): number {
    return this.#entries.size;
  }

  #live(id: string): Entry | undefined {
    const e = this.#entries.get(id);
    if (e !== undefined && e.expiresAt <= this.#now()) {
      this.#entries.delete(id);
      return undefined;
    }
    return e;
  }

  async claim(req: ClaimRequest): Promise<ClaimResult> {
    const now = this.#now();
    const e = this.#live(req.id);
    if (e === undefined) {
      this.#entries.set(req.id, {
        state: 'IN_PROGRESS',
        fingerprint: req.fingerprint,
        owner: req.owner,
        createdAt: now,
        expiresAt: now + req.ttlMs,
        leaseUntil: now + req.leaseMs,
        response: null,
      });
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
    e.state = 'COMPLETED';
    e.response = {
      ...response,
      headers: response.headers.map(([n, v]) => [n, v]),
      body: Buffer.from(response.body),
    };
    e.leaseUntil = 0;
    return true;
  }

  async release(id: string, owner: string): Promise<void> {
    const e = this.#live(id);
    if (e?.owner === owner && e.state === 'IN_PROGRESS') this.#entries.delete(id);
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
