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
 *
 * Optimization: the claims this process makes in one turn of the event loop go to Redis as one
 * script call, and so do its completions (turn-batch.ts). Each item gets the reply it would have
 * got from a call of its own, in the same order (the script runs them one after the other,
 * atomically). A call costs this process ~8 µs whatever it carries, two per first execution;
 * under load a call carries ~9 (bench/README.md, "Claims and completions of one turn in one
 * call"). Not on a Cluster, where a script may only touch the keys of one slot and each record
 * has its own: one item per call there.
 */
import { isUtf8 } from 'node:buffer';
import { Cluster } from 'ioredis';
import type {
  ClaimRequest,
  ClaimResult,
  IdempotencyRecord,
  IdempotencyStore,
  StoredResponse,
} from './idempotency-store.ts';
import type { RedisCaller, RedisClient } from './redis-connection.ts';
import { RedisScript, type ScriptArg } from './redis-script.ts';
import { TurnBatch } from './turn-batch.ts';

// KEYS: record, lease of each claim. ARGV: fingerprint, owner, ttl ms, lease ms of each. Returns
// one reply per claim, as if each had been a script of its own, in order.
const CLAIM = `
local out, now = {}, nil
for i = 1, #KEYS / 2 do
  local rec, lease, a = KEYS[2 * i - 1], KEYS[2 * i], 4 * (i - 1)
  local fp, own = ARGV[a + 1], ARGV[a + 2]
  if redis.call('EXISTS', rec) == 0 then
    if not now then
      local t = redis.call('TIME')
      now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
    end
    redis.call('HSET', rec, 'st', 'IN_PROGRESS', 'fp', fp, 'own', own, 'ca', now)
    redis.call('PEXPIRE', rec, ARGV[a + 3])
    redis.call('SET', lease, own, 'PX', ARGV[a + 4])
    out[i] = {'claimed'}
  else
    local r = redis.call('HMGET', rec, 'st', 'fp', 'ca', 'code', 'hdrs', 'body', 'om')
    local leased = redis.call('EXISTS', lease)
    if r[1] == 'IN_PROGRESS' and r[2] == fp and leased == 0 then
      redis.call('HSET', rec, 'own', own)
      redis.call('SET', lease, own, 'PX', ARGV[a + 4])
      out[i] = {'takeover'}
    else
      out[i] = {'found', r[1] or '', r[2] or '', r[3] or '0', r[4] or '', r[5] or '', r[6] or '', r[7] or '', tostring(leased)}
    end
  end
end
return out
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

// KEYS: record, lease of each completion. ARGV: owner, status, headers (JSON), body, omitted (0/1)
// of each. Returns 1 or 0 (not the owner) per completion. HSET keeps the TTL.
const COMPLETE = `
local out = {}
for i = 1, #KEYS / 2 do
  local rec, a = KEYS[2 * i - 1], 5 * (i - 1)
  if redis.call('HGET', rec, 'own') ~= ARGV[a + 1] then
    out[i] = 0
  else
    redis.call('HSET', rec, 'st', 'COMPLETED', 'code', ARGV[a + 2], 'hdrs', ARGV[a + 3], 'body', ARGV[a + 4], 'om', ARGV[a + 5])
    redis.call('DEL', KEYS[2 * i])
    out[i] = 1
  end
end
return out
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

/** The most items in one call: bounds a command's size (completions carry bodies) and its wait. */
const MAX_BATCH = 64;

/** One completion's keys and arguments, in the order of the script's. */
type Completion = [
  rec: string,
  lease: string,
  owner: string,
  status: number,
  headers: string,
  body: ScriptArg,
  omitted: number,
];

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
  readonly #claims: TurnBatch<ClaimRequest, Reply>;
  readonly #completions: TurnBatch<Completion, number>;

  /** `prefix` namespaces the keys (tests use one per test; deployments may share a Redis). */
  constructor(redis: RedisCaller<unknown>, prefix = 'sluice:idem:') {
    this.#redis = redis as RedisCaller<RedisClient>;
    this.#prefix = prefix;
    const max = redis.client instanceof Cluster ? 1 : MAX_BATCH;
    this.#claims = new TurnBatch((reqs) => this.#claimAll(reqs), max);
    this.#completions = new TurnBatch((items) => this.#completeAll(items), max);
  }

  #keys(id: string): [string, string] {
    const rec = `${this.#prefix}{${id}}`;
    return [rec, `${rec}:lease`];
  }

  async claim(req: ClaimRequest): Promise<ClaimResult> {
    const r = await this.#claims.add(req);
    const outcome = r[0].toString();
    if (outcome === 'claimed' || outcome === 'takeover') return { outcome };
    return { outcome: 'found', record: parseFound(r) };
  }

  /** One script call for claims: each one's record and lease key, then each one's arguments. */
  #claimAll(reqs: ClaimRequest[]): Promise<Reply[]> {
    const n = reqs.length;
    const args: ScriptArg[] = new Array(6 * n);
    for (let i = 0; i < n; i++) {
      const r = reqs[i];
      const [rec, lease] = this.#keys(r.id);
      args[2 * i] = rec;
      args[2 * i + 1] = lease;
      const a = 2 * n + 4 * i;
      args[a] = r.fingerprint;
      args[a + 1] = r.owner;
      args[a + 2] = r.ttlMs;
      args[a + 3] = r.leaseMs;
    }
    return this.#redis.call('claim', (c) => SCRIPTS.claim.run<Reply[]>(c, args, true, 2 * n));
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
    return (await this.#completions.add([rec, lease, owner, response.status, headers, body, omitted])) === 1;
  }

  /** One script call for completions: each one's record and lease key, then each one's arguments. */
  #completeAll(items: Completion[]): Promise<number[]> {
    const n = items.length;
    const args: ScriptArg[] = new Array(7 * n);
    for (let i = 0; i < n; i++) {
      const item = items[i];
      args[2 * i] = item[0];
      args[2 * i + 1] = item[1];
      for (let j = 0; j < 5; j++) args[2 * n + 5 * i + j] = item[2 + j];
    }
    return this.#redis.call('complete', (c) => SCRIPTS.complete.run<number[]>(c, args, false, 2 * n));
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
