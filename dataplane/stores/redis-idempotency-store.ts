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
import { isUtf8 } from 'node:buffer';
import type {
  ClaimRequest,
  ClaimResult,
  IdempotencyRecord,
  IdempotencyStore,
  StoredResponse,
} from './idempotency-store.ts';
import type { RedisCaller, RedisClient } from './redis-connection.ts';
import { RedisScript } from './redis-script.ts';

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

const SCRIPTS = {
  claim: new RedisScript(CLAIM, 2),
  peek: new RedisScript(PEEK, 2),
  renew: new RedisScript(RENEW, 2),
  complete: new RedisScript(COMPLETE, 2),
  release: new RedisScript(RELEASE, 2),
};

/**
 * Optimization: a stored body up to this size that is valid UTF-8 goes to Redis as a string (the
 * same bytes once encoded): the whole EVALSHA is then one string, where a Buffer argument puts
 * ioredis in its Buffer mode (every part measured twice and copied into a new Buffer).
 */
const STRING_BODY_BYTES = 16 * 1024;

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
  readonly #redis: RedisCaller<RedisClient>;
  readonly #prefix: string;

  /** `prefix` namespaces the keys (tests use one per test; deployments may share a Redis). */
  constructor(redis: RedisCaller<unknown>, prefix = 'sluice:idem:') {
    this.#redis = redis as RedisCaller<RedisClient>;
    this.#prefix = prefix;
  }

  #keys(id: string): [string, string] {
    const rec = `${this.#prefix}{${id}}`;
    return [rec, `${rec}:lease`];
  }

  async claim(req: ClaimRequest): Promise<ClaimResult> {
    const [rec, lease] = this.#keys(req.id);
    const r = await this.#redis.call('claim', (c) =>
      SCRIPTS.claim.run<Reply>(c, [rec, lease, req.fingerprint, req.owner, req.ttlMs, req.leaseMs], true),
    );
    const outcome = r[0].toString();
    if (outcome === 'claimed' || outcome === 'takeover') return { outcome };
    return { outcome: 'found', record: parseFound(r) };
  }

  async renew(id: string, owner: string, leaseMs: number): Promise<boolean> {
    const [rec, lease] = this.#keys(id);
    return (await this.#redis.call('renew', (c) => SCRIPTS.renew.run(c, [rec, lease, owner, leaseMs]))) === 1;
  }

  async complete(id: string, owner: string, response: StoredResponse): Promise<boolean> {
    const [rec, lease] = this.#keys(id);
    const headers = JSON.stringify(response.headers);
    const omitted = response.bodyOmitted ? 1 : 0;
    const b = response.body;
    const body = b.length <= STRING_BODY_BYTES && isUtf8(b) ? b.toString() : b;
    const r = await this.#redis.call('complete', (c) =>
      SCRIPTS.complete.run(c, [rec, lease, owner, response.status, headers, body, omitted]),
    );
    return r === 1;
  }

  async release(id: string, owner: string): Promise<void> {
    const [rec, lease] = this.#keys(id);
    await this.#redis.call('release', (c) => SCRIPTS.release.run(c, [rec, lease, owner]));
  }

  async get(id: string): Promise<IdempotencyRecord | null> {
    const [rec, lease] = this.#keys(id);
    const r = await this.#redis.call('get', (c) => SCRIPTS.peek.run<Reply>(c, [rec, lease], true));
    return r[0].toString() === 'none' ? null : parseFound(r);
  }

  async close(): Promise<void> {}
}
