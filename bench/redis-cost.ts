/**
 * `node bench/redis-cost.ts`: what Sluice's shared state costs Redis, for sizing it
 * (docs/scaling.md): Redis's CPU per operation and its memory per key. A private redis-server
 * (this machine's, no persistence) runs alone on the target core; this process, on the load
 * core, drives it through the data plane's own Redis stores (RedisCaller, the same scripts, the
 * same batching of one event-loop turn's operations into one script call).
 *
 * Scenarios: `idem-first` (an idempotent first execution: claim, then complete with a 256-byte
 * JSON body and 4 headers), `idem-replay` (the claim of a completed record, which returns it),
 * `rate-limit` (a `policy: redis` hit, each on a bucket of its own, one minute window) and
 * `cache-hit` (a 2 KiB response read by the Redis proxy-cache store). Each with 1 operation in
 * flight (one item a script call: light traffic, or a Cluster, where every record is a call of
 * its own) and with 64 (a busy replica: the operations of one turn share a call).
 *
 * Redis CPU µs/op: utime + stime of the redis-server over the measured operations, divided by
 * them; ops/s per Redis core: 1,000,000 / that. Memory bytes/key: INFO's used_memory after the
 * fill, less before, by keys written (idempotency records after `idem-first`, cache entries).
 *
 * Env: BENCH_OPS (operations measured per row, 20000), BENCH_REDIS_SERVER (redis-server).
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import CachePolicy from 'http-cache-semantics';
import { RedisCacheStore } from '../dataplane/stores/cache-redis-store.ts';
import { RedisCaller, createRedisClient } from '../dataplane/stores/redis-connection.ts';
import { RedisIdempotencyStore } from '../dataplane/stores/redis-idempotency-store.ts';
import { RedisRateLimitStore } from '../dataplane/stores/redis-rate-limit-store.ts';
import type { Decision, Window } from '../dataplane/stores/rate-limit-store.ts';
import { envInt } from './lib/env.ts';
import { portFree } from './lib/http.ts';
import { HZ, LOAD_CORE, TARGET_CORE, pinSelf, pinned } from './lib/machine.ts';
import { start, stopEverythingOnExit } from './lib/processes.ts';
import { fmt, table } from './lib/table.ts';

const OPS = envInt('BENCH_OPS', 20_000, 100);
const LOADS = [1, 64];

/** CPU clock ticks of a process so far (utime + stime). */
function ticks(pid: number): number {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(f[11]) + Number(f[12]);
}

/** Runs `op` `n` times, `inFlight` at a time; resolves when all are done. */
async function drive(n: number, inFlight: number, op: (i: number) => Promise<unknown>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < n) await op(next++);
  };
  await Promise.all(Array.from({ length: inFlight }, worker));
}

const BODY = Buffer.from(
  JSON.stringify({ id: 'ch_0123456789', amount: 100, currency: 'EUR', pad: 'x'.repeat(190) }),
);
const RESPONSE = {
  status: 201,
  headers: [
    ['content-type', 'application/json'],
    ['location', '/charges/ch_0123456789'],
    ['etag', '"v1"'],
    ['x-request-id', randomUUID()],
  ] as [string, string][],
  body: BODY.subarray(0, 256),
  bodyOmitted: false,
};
const MINUTE: readonly Window[] = [{ seconds: 60, limit: 1_000_000 }];

function cacheEntry(): { status: number; body: Buffer; policy: CachePolicy } {
  const req = { method: 'GET', url: '/items/1', headers: { host: 'api.example' } };
  const res = {
    status: 200,
    headers: { 'cache-control': 'public, max-age=3600', 'content-type': 'application/json' },
  };
  return { status: 200, body: Buffer.alloc(2048, 'x'), policy: new CachePolicy(req, res, { shared: true }) };
}

async function main(): Promise<void> {
  pinSelf();
  stopEverythingOnExit();
  let port = 18300;
  while (!(await portFree(port))) port++;
  const dir = fs.mkdtempSync(join(tmpdir(), 'sluice-bench-redis-'));
  const server = process.env.BENCH_REDIS_SERVER ?? 'redis-server';
  const redis = start(
    'redis',
    pinned(TARGET_CORE, [server, '--port', String(port), '--save', '', '--appendonly', 'no', '--dir', dir]),
    join(dir, 'redis.log'),
  );
  const caller = new RedisCaller(createRedisClient(`redis://127.0.0.1:${port}`), {
    timeoutMs: 5_000,
    maxInFlight: 10_000,
  });
  if (!(await caller.ready(10_000)))
    throw new Error(`${server} did not answer on port ${port} within 10 s: see ${join(dir, 'redis.log')}`);
  // taskset execs the server: the child's pid is redis-server's.
  const pid = redis.child.pid!;
  const client = caller.client;
  const usedMemory = async () => Number(/used_memory:(\d+)/.exec(await client.info('memory'))![1]);

  const idem = new RedisIdempotencyStore(caller, 'b:idem:');
  const limits = new RedisRateLimitStore(caller, 'b:rl:');
  const cache = new RedisCacheStore(caller, 'b:cache:');
  const claim = (id: string, owner = randomUUID()) =>
    idem.claim({ id, fingerprint: 'f'.repeat(64), owner, ttlMs: 3_600_000, leaseMs: 10_000 });
  const first = async (id: string) => {
    const owner = randomUUID();
    await claim(id, owner);
    await idem.complete(id, owner, RESPONSE);
  };
  const hit = (bucket: string) =>
    new Promise<Decision>((resolve, reject) =>
      limits.hit(bucket, MINUTE, { decided: resolve, failed: reject }),
    );

  const rows: string[][] = [];
  const memory: string[][] = [];
  const measure = async (name: string, inFlight: number, op: (i: number) => Promise<unknown>) => {
    await drive(Math.min(OPS, 2_000), inFlight, op); // warm-up: scripts loaded, code compiled
    const t0 = ticks(pid);
    const s0 = performance.now();
    await drive(OPS, inFlight, op);
    const seconds = (performance.now() - s0) / 1000;
    const cpuSeconds = (ticks(pid) - t0) / HZ;
    const us = (cpuSeconds * 1e6) / OPS;
    rows.push([
      name,
      String(inFlight),
      String(OPS),
      fmt(us, 1),
      fmt(us > 0 ? 1e6 / us : Number.NaN, 0),
      fmt(OPS / seconds, 0),
      fmt((cpuSeconds / seconds) * 100, 0),
    ]);
    process.stderr.write(
      `bench: ${name}, ${inFlight} in flight: ${fmt(us, 1)} µs of Redis CPU an operation\n`,
    );
  };

  for (const inFlight of LOADS) {
    const ids: string[] = [];
    const before = await usedMemory();
    await measure('idem-first', inFlight, () => {
      const id = randomUUID();
      ids.push(id);
      return first(id);
    });
    if (inFlight === LOADS[0]) {
      const keys = await client.dbsize();
      memory.push([
        'idempotency record (completed, 256-byte body)',
        fmt(((await usedMemory()) - before) / keys, 0),
      ]);
    }
    await measure('idem-replay', inFlight, (i) => claim(ids[i % ids.length]));
    await measure('rate-limit', inFlight, () => hit(randomUUID()));
    await client.flushall();
  }

  const before = await usedMemory();
  const entry = cacheEntry();
  const N = 2_000;
  for (let i = 0; i < N; i++) await cache.set(`GET|api.example|/items/${i}`, entry, 3_600_000);
  memory.push(['proxy-cache entry (2 KiB body)', fmt(((await usedMemory()) - before) / N, 0)]);
  for (const inFlight of LOADS)
    await measure('cache-hit', inFlight, (i) => cache.get([`GET|api.example|/items/${i % N}`]));

  await caller.close();
  fs.rmSync(dir, { recursive: true, force: true });
  console.log(
    `\nRedis's cost per operation (${OPS} operations a row; redis-server alone on core ${TARGET_CORE}, this driver on core ${LOAD_CORE})\n`,
  );
  console.log(
    table(
      [
        'scenario',
        'in flight',
        'ops',
        'Redis CPU µs/op',
        'ops/s per Redis core',
        'ops/s driven',
        'Redis busy %',
      ],
      rows,
    ),
  );
  console.log(`\n${table(['memory per key', 'bytes'], memory)}`);
  console.log(
    '\nRedis CPU µs/op: utime+stime of redis-server over the measured operations / operations; ops/s per Redis core: 1e6 / that.\n' +
      'idem-first is one operation: its claim and its complete (two script calls, each shared with the others in flight).\n' +
      'memory per key: INFO used_memory after writing them, less before, / keys (allocator overhead included).',
  );
  process.exit(0);
}

await main();
