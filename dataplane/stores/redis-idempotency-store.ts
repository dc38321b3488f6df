/**
 * Idempotency records in Redis, shared by every data-plane replica. A record is a hash
 * `<prefix>{<id>}` (state, fingerprint, owner, created_at, response) whose TTL is set once, at
 * creation (spec §8: counted from created_at; Redis expiry is the cleanup job). The owner's
 * lease is a second key `<prefix>{<id>}:lease` with a short PX expiry. The braces are a hash
 * tag: both keys live on one Redis Cluster slot, so each script below is atomic everywhere.
 *
 * Round trips: claim is one script (insert, take over, or read what is there), so a replay
 * costs one round trip and a first execution two (claim, complete). Time comes from Redis
 * (TIME), never from the replicas' clocks.
 */
import type { Cluster, Redis } from 'ioredis';
import type {
  ClaimRequest,
  ClaimResult,
  IdempotencyRecord,
  IdempotencyStore,
  StoredResponse,
} from './idempotency-store.ts';
import type { RedisCaller } from './redis-connection.ts';

// KEYS: record, lease. ARGV: fingerprint, owner, ttl ms, lease ms.
const CLAIM = `
if redis.call('EXISTS', KEYS[1]) == 0 then
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  redis.call('HSET', KEYS[1], 'st', 'IN_PROGRESS', 'fp', ARGV[1], 'own', ARGV[2], 'ca', now)
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
  redis.call('SET', KEYS[2], ARGV[2], 'PX', ARGV[4])
  return {'claimed'}
end
local r = redis.call('HMGET', KEYS[1], 'st', 'fp', 'ca', 'code', 'hdrs', 'body', 'om')
local leased = redis.call('EXISTS', KEYS[2])
if r[1] == 'IN_PROGRESS' and r[2] == ARGV[1] and leased == 0 then
  redis.call('HSET', KEYS[1], 'own', ARGV[2])
  redis.call('SET', KEYS[2], ARGV[2], 'PX', ARGV[4])
  return {'takeover'}
end
return {'found', r[1] or '', r[2] or '', r[3] or '0', r[4] or '', r[5] or '', r[6] or '', r[7] or '', tostring(leased)}
`;

// KEYS: record, lease. ARGV: (none).
const PEEK = `
if redis.call('EXISTS', KEYS[1]) == 0 then return {'none'} end
local r = redis.call('HMGET', KEYS[1], 'st', 'fp', 'ca', 'code', 'hdrs', 'body', 'om')
local leased = redis.call('EXISTS', KEYS[2])
return {'found', r[1] or '', r[2] or '', r[3] or '0', r[4] or '', r[5] or '', r[6] or '', r[7] or '', tostring(leased)}
`;

// KEYS: record, lease. ARGV: owner, lease ms.
const RENEW = `
if redis.call('HGET', KEYS[1], 'own') ~= ARGV[1] or redis.call('HGET', KEYS[1], 'st') ~= 'IN_PROGRESS' then return 0 end
redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[2])
return 1
`;

// KEYS: record, lease. ARGV: owner, status, headers (JSON), body, omitted (0/1). HSET keeps the TTL.
const COMPLETE = `
if redis.call('HGET', KEYS[1], 'own') ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'st', 'COMPLETED', 'code', ARGV[2], 'hdrs', ARGV[3], 'body', ARGV[4], 'om', ARGV[5])
redis.call('DEL', KEYS[2])
return 1
`;

// KEYS: record, lease. ARGV: owner.
const RELEASE = `
if redis.call('HGET', KEYS[1], 'own') ~= ARGV[1] or redis.call('HGET', KEYS[1], 'st') ~= 'IN_PROGRESS' then return 0 end
redis.call('DEL', KEYS[1], KEYS[2])
return 1
`;

type Reply = Buffer[];

interface Scripts {
  sluiceIdemClaimBuffer(
    rec: string,
    lease: string,
    fp: string,
    owner: string,
    ttl: number,
    leaseMs: number,
  ): Promise<Reply>;
  sluiceIdemPeekBuffer(rec: string, lease: string): Promise<Reply>;
  sluiceIdemRenew(rec: string, lease: string, owner: string, leaseMs: number): Promise<number>;
  sluiceIdemComplete(
    rec: string,
    lease: string,
    owner: string,
    status: number,
    headers: string,
    body: Buffer,
    omitted: number,
  ): Promise<number>;
  sluiceIdemRelease(rec: string, lease: string, owner: string): Promise<number>;
}

export function defineIdempotencyScripts(client: Redis | Cluster): void {
  const define = (name: string, lua: string) => client.defineCommand(name, { numberOfKeys: 2, lua });
  define('sluiceIdemClaim', CLAIM);
  define('sluiceIdemPeek', PEEK);
  define('sluiceIdemRenew', RENEW);
  define('sluiceIdemComplete', COMPLETE);
  define('sluiceIdemRelease', RELEASE);
}

function parseFound(r: Reply): IdempotencyRecord {
  const [, st, fp, ca, code, hdrs, body, om, leased] = r;
  const state = st.toString() === 'COMPLETED' ? 'COMPLETED' : 'IN_PROGRESS';
  return {
    state,
    fingerprint: fp.toString(),
    createdAt: Number(ca.toString()),
    response:
      state === 'COMPLETED'
        ? {
            status: Number(code.toString()),
            headers: JSON.parse(hdrs.toString() || '[]'),
            body,
            bodyOmitted: om.toString() === '1',
          }
        : null,
    leased: state === 'IN_PROGRESS' && leased.toString() === '1',
  };
}

export class RedisIdempotencyStore implements IdempotencyStore {
  readonly #redis: RedisCaller<Scripts>;
  readonly #prefix: string;

  /** `prefix` namespaces the keys (tests use one per test; deployments may share a Redis). */
  constructor(redis: RedisCaller<unknown>, prefix = 'sluice:idem:') {
    this.#redis = redis as RedisCaller<Scripts>;
    this.#prefix = prefix;
  }

  #keys(id: string): [string, string] {
    const rec = `${this.#prefix}{${id}}`;
    return [rec, `${rec}:lease`];
  }

  async claim(req: ClaimRequest): Promise<ClaimResult> {
    const [rec, lease] = this.#keys(req.id);
    const r = await this.#redis.call('claim', (c) =>
      c.sluiceIdemClaimBuffer(rec, lease, req.fingerprint, req.owner, req.ttlMs, req.leaseMs),
    );
    const outcome = r[0].toString();
    if (outcome === 'claimed' || outcome === 'takeover') return { outcome };
    return { outcome: 'found', record: parseFound(r) };
  }

  async renew(id: string, owner: string, leaseMs: number): Promise<boolean> {
    const [rec, lease] = this.#keys(id);
    return (await this.#redis.call('renew', (c) => c.sluiceIdemRenew(rec, lease, owner, leaseMs))) === 1;
  }

  async complete(id: string, owner: string, response: StoredResponse): Promise<boolean> {
    const [rec, lease] = this.#keys(id);
    const headers = JSON.stringify(response.headers);
    const omitted = response.bodyOmitted ? 1 : 0;
    const r = await this.#redis.call('complete', (c) =>
      c.sluiceIdemComplete(rec, lease, owner, response.status, headers, response.body, omitted),
    );
    return r === 1;
  }

  async release(id: string, owner: string): Promise<void> {
    const [rec, lease] = this.#keys(id);
    await this.#redis.call('release', (c) => c.sluiceIdemRelease(rec, lease, owner));
  }

  async get(id: string): Promise<IdempotencyRecord | null> {
    const [rec, lease] = this.#keys(id);
    const r = await this.#redis.call('get', (c) => c.sluiceIdemPeekBuffer(rec, lease));
    return r[0].toString() === 'none' ? null : parseFound(r);
  }

  async close(): Promise<void> {}
}
