/**
 * `node bench/instructions.ts`: what a request costs the proxy in CPU instructions, counted by
 * valgrind (callgrind), not timed. A count does not move with the machine: the same build and
 * requests give the same count within about 0.5 % (GC apart: whether a mark-compact falls in the
 * measured requests), whatever else the machine is doing, where the timed benches' CPU µs move
 * by ±10–30 % between runs on a shared 2-core VM. So small changes
 * can be compared here one run apart; the timed benches (bench/chain.sh, …) stay the figures to
 * quote, because instructions leave out the kernel (a socket write, ~10 µs here, is one
 * instruction of the process) and cache misses.
 *
 * Each target runs under callgrind in front of bench/upstream.ts (not under valgrind); this
 * script sends its requests (undici, 10 connections): per scenario a warm-up, a dump of the
 * counters (callgrind_control -d, which also zeroes them), the measured requests, a second dump.
 * Instructions per request = the second dump's total / requests. Every response must be a 200
 * (a row with another status is INVALID). The dump is split by what ran: JavaScript compiled by
 * V8 (its JIT code has no symbol), V8's builtins and inline caches, garbage collection, V8's
 * compilers, crypto (OpenSSL), Node's C++ and libuv and llhttp, libc (memcpy, malloc), the rest.
 * V8 is still compiling after thousands of requests under valgrind: the ratios compare the rest
 * (steady), what a request costs once the code is compiled.
 *
 * Targets: `floor` (the peers harness's bare node:http + undici, ../shared/bench/peers/
 * bare-node-undici.js, or bench/floor.ts without it), and bench/peers-target.sh as the peers
 * harness runs it: `plain`, `chain` (jwt RS256 + rate limit on Redis + request-transformer),
 * `chain-sync` (the chain with its rate limit synced every 50 ms: no Redis trip per request),
 * `cache` (a proxy-cache hit, memory store), `idem-first` (an idempotent POST with a fresh key per
 * request: each executes) and `idem-replay` (one key: every request a replay). Needs valgrind,
 * the Redis at 127.0.0.1:6379 (chain, idempotency; their keys are deleted at the end) and
 * ports 18200 (upstream) and 18400–18410 (+100: admin) free. About 1.5 minutes per target.
 *
 * Env: BENCH_TARGETS (comma-separated, default all), BENCH_WARMUP (requests, 5000),
 * BENCH_REQUESTS (measured, 3000), BENCH_FLOOR (another floor script, e.g. a copy of the harness's
 * beside another undici), BENCH_KEEP_LOGS (keep the logs and callgrind's dumps),
 * BENCH_NODE_FLAGS (node flags of every target, the floor's too: with --perf-basic-prof, each
 * process writes /tmp/perf-<pid>.map, which names the JIT code's addresses in its dumps; it is
 * moved beside them). Each target's folder keeps `<scenario>.out`, the measured requests' dump:
 * `node bench/functions.ts` lists them function by function, or two of them side by side.
 * Writes bench/results/instructions-<stamp>.json.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Pool } from 'undici';
import { envInt } from './lib/env.ts';
import { portFree, waitReady } from './lib/http.ts';
import { BENCH, NODE, onPath, ROOT } from './lib/machine.ts';
import { type Proc, start, stop, stopEverythingOnExit } from './lib/processes.ts';
import { parts } from './lib/callgrind.ts';
import { fmt, table } from './lib/table.ts';
import { CHARGE_REQUEST, GET_PATH, POST_PATH, PORTS } from './fixtures.ts';

type Scenario = 'GET' | 'POST';

interface Target {
  name: string;
  scenarios: Scenario[];
  /** peers-target.sh's arguments, or null: the floor. */
  args: string[] | null;
  /** Headers of every request; `key(i)`: the Idempotency-Key of request i, if any. */
  headers: Record<string, string>;
  key?: (i: number) => string;
}

const WARMUP = envInt('BENCH_WARMUP', 5000, 10);
const REQUESTS = envInt('BENCH_REQUESTS', 3000, 10);
const CONNECTIONS = 10;
const FIRST_PORT = 18400;
const SHARED_FLOOR = process.env.BENCH_FLOOR ?? join(ROOT, '../shared/bench/peers/bare-node-undici.js');
const run = Date.now().toString(36);
// BENCH_NODE_FLAGS (peers-target.sh's: node flags of the data plane) go to the floor as well, so
// that both run alike (e.g. --perf-basic-prof, whose map names the JavaScript in the dumps).
const nodeFlags = process.env.BENCH_NODE_FLAGS?.split(' ').filter(Boolean) ?? [];
// The idempotency targets send bench/idempotency.ts's headers (a short Authorization: the plugin
// hashes it for the caller's scope), so that their figures compare with that bench's.
const IDEM = {
  'content-type': 'application/json',
  authorization: 'Bearer bench',
  'user-agent': 'sluice-bench',
};

function targets(dir: string, token: string): Target[] {
  // The peers harness's targets get the chain's Authorization header, as in bench/chain.sh (the
  // harness sends the same headers to all): a proxy forwards it, and checking its ~600 bytes
  // (llhttp, then undici's header-value check) is every target's cost, not the chain's alone.
  const json = { 'content-type': 'application/json', authorization: `Bearer ${token}` };
  return [
    { name: 'floor', scenarios: ['GET', 'POST'], args: null, headers: json },
    { name: 'plain', scenarios: ['GET', 'POST'], args: [], headers: json },
    { name: 'chain', scenarios: ['GET', 'POST'], args: ['--chain', dir], headers: json },
    { name: 'chain-sync', scenarios: ['GET', 'POST'], args: ['--chain', dir, '50'], headers: json },
    { name: 'cache', scenarios: ['GET'], args: ['--cache'], headers: json },
    {
      name: 'idem-first',
      scenarios: ['POST'],
      args: ['--idempotency'],
      headers: IDEM,
      key: (i) => `first-${run}-${String(i).padStart(24, '0')}`,
    },
    {
      name: 'idem-replay',
      scenarios: ['POST'],
      args: ['--idempotency'],
      headers: IDEM,
      key: () => `replay-${run}-${'0'.repeat(24)}`,
    },
  ];
}

/** Sends `n` requests, CONNECTIONS at a time; returns how many were not 200. */
async function load(
  pool: Pool,
  t: Target,
  s: Scenario,
  n: number,
  offset: number,
  connections = CONNECTIONS,
): Promise<number> {
  let next = 0;
  let bad = 0;
  const one = async () => {
    while (next < n) {
      const i = offset + next++;
      const headers = t.key ? { ...t.headers, 'idempotency-key': t.key(i) } : t.headers;
      const r = await pool.request({
        method: s,
        path: s === 'GET' ? GET_PATH : POST_PATH,
        headers,
        body: s === 'POST' ? CHARGE_REQUEST : null,
      });
      await r.body.dump();
      if (r.statusCode !== 200) bad++;
    }
  };
  await Promise.all(Array.from({ length: connections }, one));
  return bad;
}

/** Dumps (and zeroes) the counters of callgrind process `pid`; returns the dump's file. */
function dump(pid: number, out: string): string {
  const before = new Set(fs.readdirSync(out));
  const r = spawnSync('callgrind_control', ['-d', String(pid)], { encoding: 'utf8', timeout: 60_000 });
  if (r.status !== 0) throw new Error(`callgrind_control -d ${pid}: ${r.stderr || r.stdout}`);
  const file = fs.readdirSync(out).find((f) => !before.has(f));
  if (file === undefined) throw new Error(`callgrind_control -d ${pid} wrote no dump in ${out}`);
  return join(out, file);
}

interface Row {
  target: string;
  scenario: Scenario;
  requests: number;
  /** Instructions per request: all, and by part. */
  perRequest: Record<string, number>;
  invalid: string | null;
}

async function measure(t: Target, port: number, work: string): Promise<Row[]> {
  const out = join(work, t.name);
  fs.mkdirSync(out);
  const wrap = ['valgrind', '--tool=callgrind', `--callgrind-out-file=${join(out, 'callgrind.out')}`];
  const env = { BENCH_PORT: String(port), BENCH_UPSTREAM_URL: `http://127.0.0.1:${PORTS.upstream}` };
  const floor = fs.existsSync(SHARED_FLOOR) ? SHARED_FLOOR : join(BENCH, 'floor.ts');
  const p: Proc =
    t.args === null
      ? start(t.name, [...wrap, NODE, ...nodeFlags, floor], join(out, 'log'), env)
      : start(t.name, [join(BENCH, 'peers-target.sh'), ...t.args], join(out, 'log'), {
          ...env,
          BENCH_WRAP: wrap.join(' '),
          // A Redis round trip's deadline (1 s by default) is missed under valgrind, above all
          // while a dump freezes the process: the claim would be a 503.
          BENCH_SLUICE_FLAGS: '--redis-timeout-ms 60000',
        });
  const pool = new Pool(`http://127.0.0.1:${port}`, { connections: CONNECTIONS });
  const rows: Row[] = [];
  try {
    // The readiness probe: a GET without the scenario's headers (peers-target.sh's probe route).
    await waitReady(p, `http://127.0.0.1:${port}${GET_PATH}`, 180_000);
    const pid = p.child.pid!;
    // One request before the others: a replay target's key is executed once, alone (ten at once
    // would get 409, in progress, while the first runs).
    if (t.key !== undefined && (await load(pool, t, 'POST', 1, 0, 1)) > 0)
      throw new Error('the first request (executing the key) was not a 200');
    let sent = 1;
    for (const s of t.scenarios) {
      process.stderr.write(`bench: ${t.name} ${s}: ${WARMUP} + ${REQUESTS} requests\n`);
      const warmBad = await load(pool, t, s, WARMUP, sent);
      sent += WARMUP;
      dump(pid, out);
      const bad = await load(pool, t, s, REQUESTS, sent);
      sent += REQUESTS;
      // Named for its scenario, for bench/functions.ts (the warm-up's dump keeps callgrind's name).
      const measured = join(out, `${s}.out`);
      fs.renameSync(dump(pid, out), measured);
      const counted = parts(measured);
      rows.push({
        target: t.name,
        scenario: s,
        requests: REQUESTS,
        perRequest: Object.fromEntries(Object.entries(counted).map(([k, v]) => [k, v / REQUESTS])),
        invalid: bad + warmBad > 0 ? `${bad + warmBad} responses not 200` : null,
      });
    }
  } finally {
    await pool.close();
    await stop(p);
    // The perf map (BENCH_NODE_FLAGS=--perf-basic-prof) beside the dumps whose JavaScript it names
    // (copied: $TMPDIR may be another file system than /tmp).
    const map = `/tmp/perf-${p.child.pid}.map`;
    if (fs.existsSync(map)) {
      fs.copyFileSync(map, join(out, 'perf.map'));
      fs.rmSync(map);
    }
  }
  return rows;
}

async function deleteKeys(): Promise<void> {
  for (const pattern of ['sluice-bench-chain-184*', 'sluice-bench-idem-184*']) {
    const keys = spawnSync('redis-cli', ['--scan', '--pattern', pattern], { encoding: 'utf8' }).stdout;
    const list = keys.split('\n').filter(Boolean);
    for (let i = 0; i < list.length; i += 500) spawnSync('redis-cli', ['unlink', ...list.slice(i, i + 500)]);
  }
}

async function main(): Promise<void> {
  for (const cmd of ['valgrind', 'callgrind_control'])
    if (!onPath(cmd)) throw new Error(`${cmd} is not on PATH (Debian: apt-get install valgrind)`);
  stopEverythingOnExit(deleteKeys);
  const work = fs.mkdtempSync(join(tmpdir(), 'sluice-bench-instr-'));
  // The chain's key pair and token (peers-target.sh --chain reads both from the folder).
  const token = spawnSync(NODE, [join(BENCH, 'make-jwt.ts'), work], { encoding: 'utf8' }).stdout;
  fs.writeFileSync(join(work, 'token'), token);
  fs.writeFileSync(join(work, 'requests'), String(REQUESTS));
  const only = process.env.BENCH_TARGETS?.split(',');
  const chosen = targets(work, token).filter((t) => only === undefined || only.includes(t.name));
  for (const port of [PORTS.upstream, ...chosen.map((_, i) => FIRST_PORT + i)])
    if (!(await portFree(port)))
      throw new Error(`port ${port} on 127.0.0.1 is in use; the bench needs it free`);
  const upstream = start(
    'upstream',
    [NODE, join(BENCH, 'upstream.ts'), String(PORTS.upstream)],
    join(work, 'upstream.log'),
  );
  const rows: Row[] = [];
  try {
    await waitReady(upstream, `http://127.0.0.1:${PORTS.upstream}${GET_PATH}`);
    for (const [i, t] of chosen.entries()) {
      try {
        rows.push(...(await measure(t, FIRST_PORT + i, work)));
      } catch (err) {
        // One target failing (its log is kept) does not lose the others' rows.
        process.stderr.write(`bench: ${t.name}: ${(err as Error).message}\n`);
        for (const s of t.scenarios)
          rows.push({
            target: t.name,
            scenario: s,
            requests: 0,
            perRequest: {},
            invalid: 'failed (see stderr)',
          });
      }
    }
  } finally {
    await stop(upstream);
    await deleteKeys();
  }
  report(rows, work);
}

function report(rows: Row[], work: string): void {
  // Compiling is a warm-up cost (V8 still optimizing, under valgrind, after thousands of
  // requests): the ratios are of what is left, the steady cost of a request.
  const steady = (r: Row) => r.perRequest.total - r.perRequest.compiler;
  const of = (target: string, s: Scenario) =>
    rows.find((r) => r.target === target && r.scenario === s && r.invalid === null);
  const ratio = (r: Row, base: Row | undefined) =>
    base === undefined ? '-' : `${fmt(steady(r) / steady(base), 2)}×`;
  const k = (n: number | undefined) => fmt(n === undefined ? null : n / 1000, 1);
  const names = ['js', 'builtins', 'gc', 'crypto', 'node', 'libc', 'other'];
  const body = rows.map((r) => [
    `${r.target} ${r.scenario}`,
    k(r.perRequest.total),
    k(r.perRequest.compiler),
    k(steady(r)),
    ratio(r, of('floor', r.scenario)),
    ratio(r, of('plain', r.scenario)),
    ...names.map((n) => k(r.perRequest[n])),
    r.invalid ?? '',
  ]);
  process.stdout.write(
    `\ninstructions per request (thousands), ${WARMUP} warm-up + ${REQUESTS} measured requests, ${CONNECTIONS} connections\n\n` +
      `${table(['target', 'all', 'compiler', 'steady', '×floor', '×plain', ...names, 'note'], body)}\n\n` +
      'compiler: V8 still compiling (its compilers and parser); steady: all but that, what the ratios compare;\n' +
      'js: JavaScript compiled by V8; builtins: its builtins and inline caches; gc: garbage collection;\n' +
      "node: Node C++, libuv, llhttp; libc: memcpy, malloc, …; other: V8's runtime (slow paths of objects, …)\n",
  );
  const stamp = new Date().toISOString().replaceAll(':', '-');
  const file = join(BENCH, 'results', `instructions-${stamp}.json`);
  fs.mkdirSync(join(BENCH, 'results'), { recursive: true });
  fs.writeFileSync(file, `${JSON.stringify({ stamp, warmup: WARMUP, requests: REQUESTS, rows }, null, 2)}\n`);
  process.stdout.write(`results: ${file}\n`);
  if (rows.some((r) => r.invalid)) {
    process.stdout.write(`some rows are INVALID: the logs are kept in ${work}\n`);
    process.exitCode = 1;
  } else if (process.env.BENCH_KEEP_LOGS) process.stdout.write(`logs and dumps kept in ${work}\n`);
  else fs.rmSync(work, { recursive: true, force: true });
}

await main();
