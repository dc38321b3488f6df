/**
 * `node bench/idempotency.ts`: the CPU price of the idempotency plugin (Redis store), as ratios to
 * a plain proxied POST measured in the same run, and the Redis round trips it makes per request.
 *
 * One data plane (bench/bench-idempotency.yaml, --redis redis://127.0.0.1:6379, a random key
 * prefix) runs alone on core 1 in front of bench/upstream.ts; the upstream, the load generator
 * (wrk with a Lua script when on PATH, otherwise an undici loop in this process) and this script
 * share core 0. Scenarios, each a warm-up then a measured run: `plain-post` (POST /charges, no
 * plugin), `idem-first` (POST /idem/charges, a fresh Idempotency-Key per request: each executes)
 * and `idem-replay` (1,000 keys executed beforehand, cycled: every request is a replay).
 * Rounds: the scenarios in turn, BENCH_ROUNDS times; each figure is the median over the rounds,
 * and ×plain the median of each round's ratio to that round's plain-post (the machine's speed
 * drifts between rounds: a ratio within one round cancels it, as bench/chain.sh's do).
 * It asserts nothing: it prints a table and writes bench/results/idempotency-<stamp>.json. The
 * bench's Redis keys are deleted at the end; every process it started is stopped on exit.
 * Env: BENCH_ROUNDS (3), BENCH_DURATION (10), BENCH_WARMUP (3), BENCH_CONNECTIONS (50), BENCH_LOADGEN (wrk|undici),
 * BENCH_NODE_FLAGS (Node flags of the data plane, e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`),
 * BENCH_SCENARIOS (a comma-separated subset, e.g. `idem-first` to profile one), BENCH_KEEP_LOGS (keep
 * the data plane's log, e.g. for `--trace-gc-nvp`).
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { Redis } from 'ioredis';
import { CHARGE_BODY, CHARGE_REQUEST, GET_PATH, PORTS, POST_PATH } from './fixtures.ts';
import { machineTicks, processTable, selfTicks, treeTicks } from './lib/cpu.ts';
import { http, portFree, type Reply, sleep, waitReady } from './lib/http.ts';
import { BENCH, HZ, LOAD_CORE, PIN, pinned, pinSelf, SLUICE_NODE_FLAGS, TARGET_CORE } from './lib/machine.ts';
import { type Proc, start, stopAll, stopEverythingOnExit } from './lib/processes.ts';
import { median } from './lib/stats.ts';
import { fmt, table as textTable } from './lib/table.ts';

import {
  ADMIN,
  PORT,
  PREFIX,
  REDIS_URL,
  REPLAY_KEYS,
  SCENARIOS,
  type Scenario,
  opts,
  replayKey,
  withKey,
} from './idempotency/setup.ts';
import { runLoad } from './idempotency/load.ts';

// ---------------------------------------------------------------- processes

stopEverythingOnExit(() => cleanRedis());
const running = (p: Proc) => !p.exited;

const post = (path: string, key: string | null = null) =>
  http('POST', `http://127.0.0.1:${PORT}${path}`, CHARGE_REQUEST, {
    headers: withKey(key),
    timeoutMs: 5_000,
  });

// ---------------------------------------------------------------- CPU and counters

const pgrep = spawnSync('pgrep', ['-f', 'redis-server.*:6379( |$)'], { encoding: 'utf8' }).stdout ?? '';
const redisPid = Number(pgrep.split('\n')[0]) || undefined;
// Redis on the load core for the run, off the data plane's (bench/redis-core.sh says why).
const restoreRedis = spawnSync('bench/redis-core.sh', { encoding: 'utf8' }).stdout?.trim() ?? '';
process.on('exit', () => {
  if (restoreRedis) spawnSync('bash', ['-c', restoreRedis]);
});

/** Sums over the data plane's metrics that tell what its requests did. */
async function counters() {
  const text = (await http('GET', `http://127.0.0.1:${ADMIN}/metrics`, null, { timeoutMs: 5_000 })).body;
  const sum = (name: string, label = '') => {
    const re = new RegExp(`^${name}\\{[^}]*${label}[^}]*\\} (\\S+)$`, 'gm');
    return [...text.matchAll(re)].reduce((a, m) => a + Number(m[1]), 0);
  };
  return {
    redisOps: sum('sluice_store_operation_seconds_count', 'store="redis"'),
    upstreamCalls: sum('sluice_upstream_response_seconds_count'),
    replayed: sum('sluice_idempotency_requests_total', 'outcome="replayed"'),
    executed: sum('sluice_idempotency_requests_total', 'outcome="executed"'),
  };
}

// ---------------------------------------------------------------- checks and measuring

/** The upstream's exact body everywhere, replays marked as such; executes the replay set once. */
async function verify(): Promise<void> {
  const expect = async (what: string, reply: Promise<Reply>, replayed: boolean) => {
    const { status, headers, body } = await reply;
    const mark = headers['idempotent-replayed'];
    if (status !== 200 || body !== CHARGE_BODY || (mark === 'true') !== replayed)
      throw new Error(`${what}: status ${status}, idempotent-replayed ${mark}, body ${body.slice(0, 200)}`);
  };
  const idem = SCENARIOS[1].path;
  await expect(`POST ${POST_PATH}`, post(POST_PATH), false);
  await expect(`POST ${idem}, first`, post(idem, replayKey(0)), false);
  await expect(`POST ${idem}, again`, post(idem, replayKey(0)), true);
  for (let i = 1; i < REPLAY_KEYS; i += 25) {
    const batch = Array.from({ length: Math.min(25, REPLAY_KEYS - i) }, (_, j) => i + j);
    await Promise.all(batch.map((k) => expect(`replay key ${k}, first`, post(idem, replayKey(k)), false)));
  }
}

async function measure(work: string, s: Scenario, round: number, sluice: Proc, upstream: Proc) {
  const what = `${s.name}${opts.rounds > 1 ? ` (round ${round})` : ''}`;
  if (opts.warmup > 0) {
    process.stderr.write(`bench: ${what}: warm-up ${opts.warmup} s\n`);
    await runLoad(work, s, opts.warmup);
    await sleep(300); // requests cut off by the load generator finish before the counters are read
  }
  process.stderr.write(`bench: ${what}: measuring ${opts.duration} s\n`);
  const c0 = await counters();
  const [t0, self0, m0] = [processTable(), selfTicks(), machineTicks()];
  const load = await runLoad(work, s, opts.duration);
  const [t1, self1, m1] = [processTable(), selfTicks(), machineTicks()];
  await sleep(300);
  const c1 = await counters();
  const ticks = (pid: number | undefined) => treeTicks(pid, t1) - treeTicks(pid, t0);
  const [dp, up, redis] = [ticks(sluice.child.pid), ticks(upstream.child.pid), ticks(redisPid)];
  const wall = (m1.total - m0.total) / cpus().length;
  const foreign = m1.busy - m0.busy - dp - up - redis - (self1 - self0);
  const per = (x: number) => (load.requests ? x / load.requests : Number.NaN);
  const us = (t: number) => per((t / HZ) * 1e6);
  const notes: string[] = [];
  if (load.requests === 0) notes.push('no request completed');
  if (load.non2xx) notes.push(`${load.non2xx} non-2xx`);
  if (load.errors) notes.push(`${load.errors} socket errors`);
  if (s.keys === 'replay' && c1.upstreamCalls > c0.upstreamCalls) notes.push('upstream called on replays');
  if (!running(sluice)) notes.push('sluice exited');
  return {
    scenario: s.name,
    round,
    path: s.path,
    ...load,
    rps: load.requests / load.seconds,
    cpuUsPerReq: us(dp),
    // The data plane's CPU over the run, % of its one core: below ~90 % fewer requests share each
    // turn of its event loop (and that turn's socket writes), so its µs/req run higher.
    busyPct: load.seconds > 0 ? (dp / HZ / load.seconds) * 100 : 0,
    redisTripsPerReq: per(c1.redisOps - c0.redisOps),
    upstreamCallsPerReq: per(c1.upstreamCalls - c0.upstreamCalls),
    executed: c1.executed - c0.executed,
    replayed: c1.replayed - c0.replayed,
    redisCpuUsPerReq: redisPid ? us(redis) : null,
    upstreamCpuUsPerReq: us(up),
    foreignCpuPct: wall > 0 ? Math.max(0, (foreign / wall) * 100) : 0,
    notes,
    invalid: notes.length > 0,
  };
}
type Row = Awaited<ReturnType<typeof measure>>;

let cleaning: Promise<void> | null = null;
/** Deletes the bench's records: SCAN MATCH <prefix>* + UNLINK (once; later calls wait for it). */
const cleanRedis = () => (cleaning ??= deleteKeys());
async function deleteKeys(): Promise<void> {
  const redis = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 1 });
  try {
    await redis.connect();
    let deleted = 0;
    const scan = redis.scanStream({ match: `${PREFIX}*`, count: 1000 }) as AsyncIterable<string[]>;
    for await (const keys of scan) if (keys.length) deleted += await redis.unlink(...keys);
    process.stderr.write(`bench: deleted ${deleted} Redis keys ${PREFIX}*\n`);
  } catch (err) {
    process.stderr.write(`bench: could not delete the Redis keys ${PREFIX}*: ${(err as Error).message}\n`);
  } finally {
    redis.disconnect();
  }
}

// ---------------------------------------------------------------- main

/** Issue 29's limits on CPU µs/req as a ratio to plain-post: a first execution ≤ 1.3×, a replay ≤ 0.8×. */
const LIMITS: Record<string, number> = { 'idem-first': 1.3, 'idem-replay': 0.8 };

/** One scenario over the rounds: its rows, and each round's ratio to that round's plain-post. */
interface Summary {
  scenario: string;
  rows: Row[];
  /** CPU µs/req ÷ plain-post's, round by round (NaN where either row is INVALID). */
  cpuRatios: number[];
  rpsRatios: number[];
}

function summarize(rows: Row[]): Summary[] {
  const plain = new Map(
    rows.filter((r) => r.scenario === 'plain-post' && !r.invalid).map((r) => [r.round, r]),
  );
  const ratio = (r: Row, f: (x: Row) => number) => {
    const base = plain.get(r.round);
    return base === undefined || r.invalid ? Number.NaN : f(r) / f(base);
  };
  return [...new Set(rows.map((r) => r.scenario))].map((scenario) => {
    const own = rows.filter((r) => r.scenario === scenario);
    return {
      scenario,
      rows: own,
      cpuRatios: own.map((r) => ratio(r, (x) => x.cpuUsPerReq)),
      rpsRatios: own.map((r) => ratio(r, (x) => x.rps)),
    };
  });
}

/** The median of a figure over a scenario's valid rows (all of them when none is valid). */
function med(s: Summary, f: (r: Row) => number | null): number {
  const valid = s.rows.filter((r) => !r.invalid);
  return median((valid.length ? valid : s.rows).map((r) => f(r) ?? Number.NaN));
}

function mark(s: Summary): string {
  const limit = LIMITS[s.scenario];
  const x = median(s.cpuRatios);
  if (limit === undefined || Number.isNaN(x)) return '';
  return x <= limit ? ` (≤ ${limit} ✓)` : ` (> ${limit})`;
}

function table(summaries: Summary[]): string {
  const x = (ratios: number[]) => (Number.isNaN(median(ratios)) ? '-' : `${fmt(median(ratios), 2)}×`);
  const byRound = (ratios: number[]) => (ratios.length > 1 ? ratios.map((r) => fmt(r, 2)).join(' / ') : '');
  const sum = (s: Summary, f: (r: Row) => number) => String(s.rows.reduce((a, r) => a + f(r), 0));
  /** A column of medians over the rounds, with `digits` decimals. */
  const m =
    (f: (r: Row) => number | null, digits = 1) =>
    (s: Summary) =>
      fmt(med(s, f), digits);
  const columns: [string, (s: Summary) => string][] = [
    ['scenario', (s) => s.scenario],
    ['CPU µs/req', m((r) => r.cpuUsPerReq)],
    ['×plain', (s) => x(s.cpuRatios) + mark(s)],
    ['×plain by round', (s) => byRound(s.cpuRatios)],
    ['busy %', m((r) => r.busyPct, 0)],
    ['req/s', m((r) => r.rps, 0)],
    ['×plain', (s) => x(s.rpsRatios)],
    ['p50 ms', m((r) => r.p50ms, 2)],
    ['p99 ms', m((r) => r.p99ms, 2)],
    ['non-2xx', (s) => sum(s, (r) => r.non2xx)],
    ['errors', (s) => sum(s, (r) => r.errors)],
    ['redis trips/req', m((r) => r.redisTripsPerReq, 2)],
    ['upstream calls/req', m((r) => r.upstreamCallsPerReq, 2)],
    ['redis µs/req', m((r) => r.redisCpuUsPerReq)],
    ['foreign %', m((r) => r.foreignCpuPct, 0)],
    [
      'note',
      (s) =>
        s.rows
          .filter((r) => r.invalid)
          .map((r) => `INVALID${opts.rounds > 1 ? ` (round ${r.round})` : ''}: ${r.notes.join('; ')}`)
          .join('; '),
    ],
  ];
  return textTable(
    columns.map(([h]) => h),
    summaries.map((s) => columns.map(([, f]) => f(s))),
  );
}

async function main(): Promise<void> {
  for (const port of [PORTS.upstream, PORT, ADMIN])
    if (!(await portFree(port)))
      throw new Error(`port ${port} on 127.0.0.1 is in use; the bench needs it free`);
  pinSelf();
  const work = fs.mkdtempSync(join(tmpdir(), 'sluice-bench-idem-'));
  const load0 = loadavg()[0];
  process.stderr.write(
    `bench: ${opts.loadgen}, ${opts.connections} connections, ${opts.warmup} s warm-up + ${opts.duration} s ` +
      `per scenario; ${PIN ? 'pinned: sluice on core 1, load + upstream on core 0' : 'NOT pinned'}; ` +
      `Redis prefix ${PREFIX}; redis-server pid ${redisPid ?? 'not found'}; logs in ${work}\n`,
  );
  const upArgv = [process.execPath, 'bench/upstream.ts', String(PORTS.upstream)];
  const upstream = start('upstream', pinned(LOAD_CORE, upArgv), join(work, 'upstream.log'));
  const args =
    `bin/sluice.ts run -f bench/bench-idempotency.yaml --host 127.0.0.1 --port ${PORT} --admin-port ${ADMIN} ` +
    `--admin-host 127.0.0.1 --no-access-log --log-level warn --drain-timeout-ms 2000 --redis ${REDIS_URL}`;
  const argv = [
    process.execPath,
    ...SLUICE_NODE_FLAGS,
    ...(process.env.BENCH_NODE_FLAGS ?? '').split(' ').filter(Boolean),
    ...args.split(' '),
    '--redis-prefix',
    PREFIX,
    '--state-dir',
    join(work, 'state'),
  ];
  const rows: Row[] = [];
  try {
    await waitReady(upstream, `http://127.0.0.1:${PORTS.upstream}${GET_PATH}`);
    const sluice = start('sluice', pinned(TARGET_CORE, argv), join(work, 'sluice.log'));
    await waitReady(sluice, `http://127.0.0.1:${PORT}${GET_PATH}`);
    await verify();
    const only = process.env.BENCH_SCENARIOS?.split(',');
    for (let round = 1; round <= opts.rounds; round++)
      for (const s of SCENARIOS)
        if (!only || only.includes(s.name)) rows.push(await measure(work, s, round, sluice, upstream));
  } finally {
    await stopAll();
    await cleanRedis();
  }

  const pinning = PIN ? '' : ', NOT pinned';
  const summaries = summarize(rows);
  const rounds = opts.rounds > 1 ? `, ${opts.rounds} rounds (medians)` : '';
  process.stdout.write(
    [
      `\nidempotency plugin (Redis store): ${opts.connections} connections, ${opts.duration} s measured ` +
        `after ${opts.warmup} s warm-up${rounds} (${opts.loadgen}${pinning})\n`,
      table(summaries),
      '',
      "CPU µs/req: utime+stime of the sluice process tree in the measured run / requests; ×plain: to plain-post's",
      'in the same round (the median of the rounds\' ratios, each listed under "by round"). busy %: the data plane\'s',
      "CPU in the run, % of its core (below ~90 %, fewer requests share each turn's writes: its µs/req run higher).",
      'redis trips/req: delta of sluice_store_operation_seconds_count{store="redis"} (all ops) / requests;',
      'upstream calls/req: delta of sluice_upstream_response_seconds_count / requests. redis µs/req: the',
      'redis-server process (moved to the load core for the run; counts whatever else uses it). foreign %: CPU of other processes',
      `during the run, % of one core. Load average at start: ${load0.toFixed(2)}.`,
      '',
    ].join('\n'),
  );
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  const file = join(BENCH, 'results', `idempotency-${stamp}.json`);
  const machine = {
    cpus: cpus().length,
    model: cpus()[0]?.model,
    node: process.version,
    loadavgAtStart: load0,
  };
  const params = { ...opts, pinned: PIN, replayKeys: REPLAY_KEYS, redisPrefix: PREFIX, redisPid };
  fs.mkdirSync(dirname(file), { recursive: true });
  const medians = summaries.map((s) => ({
    scenario: s.scenario,
    cpuUsPerReq: med(s, (r) => r.cpuUsPerReq),
    cpuRatio: median(s.cpuRatios),
    cpuRatios: s.cpuRatios,
    rps: med(s, (r) => r.rps),
  }));
  fs.writeFileSync(file, `${JSON.stringify({ stamp, machine, params, medians, rows }, null, 2)}\n`);
  process.stdout.write(`results: ${file}\n`);
  if (rows.some((r) => r.invalid)) {
    process.stdout.write(`some rows are INVALID: the logs are kept in ${work}\n`);
    process.exitCode = 1;
  } else if (process.env.BENCH_KEEP_LOGS) process.stdout.write(`logs kept in ${work}\n`);
  else fs.rmSync(work, { recursive: true, force: true });
}

main().catch(async (err: Error) => {
  process.stderr.write(`bench: ${err.message}\n`);
  await stopAll();
  await cleanRedis();
  process.exit(1);
});
