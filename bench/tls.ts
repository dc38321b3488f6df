/**
 * `node bench/tls.ts`: the CPU price of TLS and h2 on the proxy port, next to cleartext, in one
 * run. One `sluice run` (bench/bench.yaml, --https-port with an openssl-made default
 * certificate) runs alone on core 1 in front of bench/upstream.ts; the upstream, the load
 * generator and this script share core 0. Scenarios, GET /api/items/42 over kept-alive
 * connections, each a warm-up then a measured run: `http1` (wrk, cleartext), `https1` (wrk over
 * TLS: HTTP/1.1 by ALPN) and `h2` (h2load, one stream at a time per connection, so it compares
 * with wrk's connections; skipped when h2load is not on PATH: Debian's nghttp2-client).
 * It asserts nothing: it prints a table and writes bench/results/tls-<stamp>.json.
 * With BENCH_ROUNDS > 1 the scenarios run interleaved that many times and each row is the round
 * with the median CPU µs/req (a machine shared with other work then weighs less on one scenario).
 * Env: BENCH_DURATION (10), BENCH_WARMUP (3), BENCH_CONNECTIONS (50), BENCH_ROUNDS (1).
 */
import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import * as fs from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { GET_PATH, PORTS } from './fixtures.ts';
import { envInt } from './lib/env.ts';
import { machineTicks, processTable, selfTicks, treeTicks } from './lib/cpu.ts';
import { portFree, sleep, waitReady } from './lib/http.ts';
import {
  BENCH,
  HZ,
  LOAD_CORE,
  onPath,
  PIN,
  pinned,
  pinSelf,
  SLUICE_NODE_FLAGS,
  TARGET_CORE,
} from './lib/machine.ts';
import {
  type Proc,
  start,
  stopAll,
  stopEverythingOnExit,
  trackLoader,
  untrackLoader,
} from './lib/processes.ts';
import { fmt, table as textTable } from './lib/table.ts';
import { ms, parseWrk } from './lib/wrk.ts';

const PORT = 18206; // cleartext; PORTS (fixtures.ts) holds 18200–18204 and 18211, idempotency.ts 18205 and 18212
const HTTPS_PORT = 18207;
const ADMIN = 18213;
const opts = {
  duration: envInt('BENCH_DURATION', 10, 1),
  warmup: envInt('BENCH_WARMUP', 3, 0),
  connections: envInt('BENCH_CONNECTIONS', 50, 1),
  rounds: envInt('BENCH_ROUNDS', 1, 1),
};

type Load = {
  requests: number;
  seconds: number;
  p50ms: number | null;
  p99ms: number | null;
  meanMs: number | null;
  failed: number;
};
type Scenario = { name: string; tool: 'wrk' | 'h2load'; url: string };
const SCENARIOS: Scenario[] = [
  { name: 'http1', tool: 'wrk', url: `http://127.0.0.1:${PORT}${GET_PATH}` },
  { name: 'https1', tool: 'wrk', url: `https://127.0.0.1:${HTTPS_PORT}${GET_PATH}` },
  { name: 'h2', tool: 'h2load', url: `https://127.0.0.1:${HTTPS_PORT}${GET_PATH}` },
];

stopEverythingOnExit();

async function runTool(argv: string[]): Promise<string> {
  const child = spawn(argv[0], argv.slice(1), { stdio: ['ignore', 'pipe', 'inherit'] });
  trackLoader(child);
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d));
  const [code] = await once(child, 'exit');
  untrackLoader(child);
  if (code !== 0) throw new Error(`${argv[0]} exited with ${code}:\n${out}`);
  return out;
}

async function runLoad(s: Scenario, seconds: number): Promise<Load> {
  if (s.tool === 'wrk') {
    const cmd = `wrk -t1 -c${opts.connections} -d${seconds}s --latency --timeout 5s ${s.url}`.split(' ');
    const w = parseWrk(await runTool(pinned(LOAD_CORE, cmd)));
    return { ...w, meanMs: null, failed: w.non2xx + w.errors };
  }
  // -m1: one stream at a time per connection, like a wrk connection; -t1: one load thread.
  const cmd = `h2load -t1 -c${opts.connections} -m1 -D${seconds} ${s.url}`.split(' ');
  const out = await runTool(pinned(LOAD_CORE, cmd));
  const done = /finished in ([\d.]+)(us|ms|s|m),/.exec(out);
  const reqs = /requests: \d+ total, \d+ started, (\d+) done, (\d+) succeeded, (\d+) failed/.exec(out);
  const mean = /time for request:\s+\S+\s+\S+\s+([\d.]+)(us|ms|s)/.exec(out);
  if (!done || !reqs) throw new Error(`cannot read h2load's output:\n${out}`);
  return {
    requests: Number(reqs[2]),
    seconds: ms(done[1], done[2]) / 1000,
    p50ms: null,
    p99ms: null,
    meanMs: mean ? ms(mean[1], mean[2]) : null,
    failed: Number(reqs[1]) - Number(reqs[2]) + Number(reqs[3]),
  };
}

async function measure(s: Scenario, sluice: Proc, upstream: Proc) {
  if (opts.warmup > 0) {
    process.stderr.write(`bench: ${s.name}: warm-up ${opts.warmup} s\n`);
    await runLoad(s, opts.warmup);
    await sleep(300);
  }
  process.stderr.write(`bench: ${s.name}: measuring ${opts.duration} s\n`);
  const [t0, self0, m0] = [processTable(), selfTicks(), machineTicks()];
  const load = await runLoad(s, opts.duration);
  const [t1, self1, m1] = [processTable(), selfTicks(), machineTicks()];
  const ticks = (pid: number | undefined) => treeTicks(pid, t1) - treeTicks(pid, t0);
  const [dp, up] = [ticks(sluice.child.pid), ticks(upstream.child.pid)];
  const wall = (m1.total - m0.total) / cpus().length;
  const foreign = m1.busy - m0.busy - dp - up - (self1 - self0);
  const notes: string[] = [];
  if (load.requests === 0) notes.push('no request completed');
  if (load.failed) notes.push(`${load.failed} failed or non-2xx`);
  if (sluice.exited) notes.push('sluice exited');
  return {
    scenario: s.name,
    ...load,
    rps: load.requests / load.seconds,
    cpuUsPerReq: load.requests ? ((dp / HZ) * 1e6) / load.requests : Number.NaN,
    foreignCpuPct: wall > 0 ? Math.max(0, (foreign / wall) * 100) : 0,
    notes,
    invalid: notes.length > 0,
  };
}
type Row = Awaited<ReturnType<typeof measure>>;

function table(rows: Row[]): string {
  const base = rows.find((r) => r.scenario === 'http1' && !r.invalid);
  const x = (a: number, b: number | undefined) => (b === undefined ? '-' : `${fmt(a / b, 2)}×`);
  const columns: [string, (r: Row) => string][] = [
    ['scenario', (r) => r.scenario],
    ['CPU µs/req', (r) => fmt(r.cpuUsPerReq)],
    ['×http1', (r) => x(r.cpuUsPerReq, base?.cpuUsPerReq)],
    ['req/s', (r) => fmt(r.rps, 0)],
    ['p50 ms', (r) => fmt(r.p50ms, 2)],
    ['p99 ms', (r) => fmt(r.p99ms, 2)],
    ['mean ms', (r) => fmt(r.meanMs, 2)],
    ['foreign %', (r) => fmt(r.foreignCpuPct, 0)],
    ['note', (r) => (r.invalid ? `INVALID: ${r.notes.join('; ')}` : '')],
  ];
  return textTable(
    columns.map(([h]) => h),
    rows.map((r) => columns.map(([, f]) => f(r))),
  );
}

async function main(): Promise<void> {
  for (const port of [PORTS.upstream, PORT, HTTPS_PORT, ADMIN])
    if (!(await portFree(port)))
      throw new Error(`port ${port} on 127.0.0.1 is in use; the bench needs it free`);
  const scenarios = SCENARIOS.filter((s) => onPath(s.tool));
  for (const s of SCENARIOS)
    if (!scenarios.includes(s)) process.stderr.write(`bench: ${s.name} skipped: ${s.tool} is not on PATH\n`);
  pinSelf();
  const work = fs.mkdtempSync(join(tmpdir(), 'sluice-bench-tls-'));
  // An ECDSA P-256 certificate, what a current CA (Let's Encrypt, cert-manager's default) issues.
  execFileSync(
    'openssl',
    [
      ...'req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 -subj /CN=bench.test'.split(
        ' ',
      ),
      ...[
        '-addext',
        'subjectAltName=DNS:bench.test,IP:127.0.0.1',
        '-keyout',
        join(work, 'key.pem'),
        '-out',
        join(work, 'cert.pem'),
      ],
    ],
    { stdio: 'ignore' },
  );
  const load0 = loadavg()[0];
  process.stderr.write(
    `bench: ${opts.connections} connections, ${opts.warmup} s warm-up + ${opts.duration} s per scenario; ` +
      `${PIN ? 'pinned: sluice on core 1, load + upstream on core 0' : 'NOT pinned'}; logs in ${work}\n`,
  );
  const upstream = start(
    'upstream',
    pinned(LOAD_CORE, [process.execPath, 'bench/upstream.ts', String(PORTS.upstream)]),
    join(work, 'upstream.log'),
  );
  const argv = [
    process.execPath,
    ...SLUICE_NODE_FLAGS,
    ...`bin/sluice.ts run -f bench/bench.yaml --host 127.0.0.1 --port ${PORT} --https-port ${HTTPS_PORT}`.split(
      ' ',
    ),
    ...`--admin-port ${ADMIN} --admin-host 127.0.0.1 --no-access-log --log-level warn --drain-timeout-ms 2000`.split(
      ' ',
    ),
    ...['--tls-default-cert', join(work, 'cert.pem'), '--tls-default-key', join(work, 'key.pem')],
    ...['--state-dir', join(work, 'state')],
  ];
  const rows: Row[] = [];
  try {
    await waitReady(upstream, `http://127.0.0.1:${PORTS.upstream}${GET_PATH}`);
    const sluice = start('sluice', pinned(TARGET_CORE, argv), join(work, 'sluice.log'));
    await waitReady(sluice, `http://127.0.0.1:${PORT}${GET_PATH}`);
    const all: Row[][] = scenarios.map(() => []);
    for (let round = 0; round < opts.rounds; round++)
      for (const [i, s] of scenarios.entries()) all[i].push(await measure(s, sluice, upstream));
    for (const runs of all) {
      const sorted = [...runs].sort((a, b) => a.cpuUsPerReq - b.cpuUsPerReq);
      rows.push(sorted[Math.floor((sorted.length - 1) / 2)]);
    }
  } finally {
    await stopAll();
  }
  const pinning = PIN ? '' : ', NOT pinned';
  process.stdout.write(
    [
      `\nTLS and h2 on the proxy port: GET ${GET_PATH}, ${opts.connections} kept-alive connections, ` +
        `${opts.duration} s measured after ${opts.warmup} s warm-up, median of ${opts.rounds} round(s)${pinning}\n`,
      table(rows),
      '',
      'CPU µs/req: utime+stime of the sluice process in the measured run / requests (handshakes happen in the',
      'warm-up: connections are kept). h2load prints no percentiles: its mean is shown instead. foreign %: CPU',
      `of other processes during the run, % of one core. Load average at start: ${load0.toFixed(2)}.`,
      '',
    ].join('\n'),
  );
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  const file = join(BENCH, 'results', `tls-${stamp}.json`);
  fs.mkdirSync(join(BENCH, 'results'), { recursive: true });
  fs.writeFileSync(file, `${JSON.stringify({ opts, load0, pinned: PIN, rows }, null, 2)}\n`);
  process.stderr.write(`bench: wrote ${file}\n`);
}

main().then(
  () => process.exit(0),
  async (err) => {
    process.stderr.write(`bench: ${(err as Error).stack}\n`);
    await stopAll();
    process.exit(1);
  },
);
