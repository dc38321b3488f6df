/**
 * Idempotency records (spec §2.1, §3): one per (caller, key), IN_PROGRESS then COMPLETED,
 * removed after its TTL counted from creation. The Redis store shares records between
 * replicas; the memory store, with the same behaviour, serves standalone mode.
 *
 * A record is held IN_PROGRESS by one owner (a random id per execution) under a short lease
 * that the owner renews while the upstream call runs. If the owner dies, the lease lapses and
 * the next request with the same key and fingerprint takes the record over (`takeover`).
 * Only the owner can complete or release a record, so a replica that lost its lease can
 * never overwrite the result of the one that took over.
 */
export type RecordState = 'IN_PROGRESS' | 'COMPLETED';

export interface StoredResponse {
  status: number;
  /** The response headers that are replayed, lower-case names, in order. */
  headers: [name: string, value: string][];
  body: Buffer;
  /** The body was larger than the plugin stores: a replay sends status and headers only. */
  bodyOmitted: boolean;
}

export interface IdempotencyRecord {
  state: RecordState;
  /** SHA-256 hex of the request (spec: request_hash). */
  fingerprint: string;
  /** Milliseconds since the epoch, by the store's clock. */
  createdAt: number;
  /** Set when COMPLETED. */
  response: StoredResponse | null;
  /** IN_PROGRESS: whether the owner's lease still runs. */
  leased: boolean;
}

export type ClaimResult =
  /** No record was there: one now is, IN_PROGRESS, held by this owner. */
  | { outcome: 'claimed' }
  /** The record was IN_PROGRESS with the same fingerprint and a lapsed lease: this owner holds it now. */
  | { outcome: 'takeover' }
  /** A record exists and stays as it is. */
  | { outcome: 'found'; record: IdempotencyRecord };

export interface ClaimRequest {
  /** The record's id: a hash of (caller scope, key); never the key in clear. */
  id: string;
  fingerprint: string;
  owner: string;
  ttlMs: number;
  leaseMs: number;
}

export interface IdempotencyStore {
  /** Inserts IN_PROGRESS atomically, takes over a lapsed lease, or returns what is there: one round trip. */
  claim(req: ClaimRequest): Promise<ClaimResult>;
  /** Extends the owner's lease; false when the record is no longer this owner's. */
  renew(id: string, owner: string, leaseMs: number): Promise<boolean>;
  /** Stores the response and marks COMPLETED, keeping the TTL from creation; false when not the owner. */
  complete(id: string, owner: string, response: StoredResponse): Promise<boolean>;
  /** Removes an IN_PROGRESS record of this owner: the request never reached the upstream. */
  release(id: string, owner: string): Promise<void>;
  get(id: string): Promise<IdempotencyRecord | null>;
  close(): Promise<void>;
}

/** The store could not answer (down, too slow, overloaded): idempotent requests fail closed with 503. */
export class StoreUnavailableError extends Error {
  override readonly name = 'StoreUnavailableError';
  /** The command was sent and may still run (a deadline passed, the connection dropped): its effect is unknown. */
  readonly mayHaveApplied: boolean;

  constructor(message: string, opts: { cause?: unknown; mayHaveApplied?: boolean } = {}) {
    super(message, { cause: opts.cause });
    this.mayHaveApplied = opts.mayHaveApplied ?? false;
  }
}
