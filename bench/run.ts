/**
 * `make bench`: the data plane next to its floors, measured in one run on this machine.
 *
 * An upstream (bench/upstream.ts) runs on core 0 with the load generator (wrk when it is on PATH,
 * otherwise autocannon from bench/node_modules, installed on demand); each target runs alone on
 * core 1, one after another: `direct` (a second copy of the upstream: no proxy), `floor`
 * (bench/floor.ts: node:http + undici, nothing else), `sluice` (bin/sluice.ts run -f bench/bench.yaml)
 * and `sluice+transformer` (bench/bench-transformer.yaml: one request-transformer plugin), and
 * `sluice+cache` (bench/bench-cache.yaml: proxy-cache, memory store; GET is a cache hit).
 * For each target and scenario: a warm-up (not counted), then a measured run; the main figure
 * is the CPU time of the target's process tree per request, printed next to its ratio to `floor`.
 * Timings are never asserted: they are ratios to baselines measured in the same run.
 * Then bench/compile.ts times the controller's build() and the data plane's buildRuntime().
 *
 * Usage: node bench/run.ts [--duration S] [--warmup S] [--connections N] [--rounds N] [--scenarios get,post]
 *          [--targets direct,floor,sluice,sluice+transformer,sluice+cache] [--target NAME:PORT:CMD]…
 *          [--loadgen wrk|autocannon] [--no-compile] [--rate-of-floor F]
 * With --rate-of-floor F (e.g. 0.5) every target is measured at a constant rate instead of at full
 * load: F × the floor's full-load req/s, measured first in the same run; the table then shows the
 * p99 each target adds to the floor's at that rate (the tail a user sees below saturation).
 * Env: BENCH_DURATION, BENCH_WARMUP, BENCH_CONNECTIONS, BENCH_ROUNDS, BENCH_SCENARIOS, BENCH_TARGETS,
 *      BENCH_LOADGEN, BENCH_COMPILE=0.
 */
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import { CHARGE_BODY, CHARGE_REQUEST, GET_PATH, ITEM_BODY, PORTS, POST_PATH } from './fixtures.ts';
import { coreTicks, processTable, selfTicks, treeTicks } from './lib/cpu.ts';
import { http, portFree, waitReady as waitAnswer } from './lib/http.ts';
import {
  BENCH,
  HZ,
  LOAD_CORE,
  NODE,
  onPath,
  PIN,
  pinned,
  pinSelf,
  ROOT,
  SLUICE_NODE_FLAGS,
  TARGET_CORE,
} from './lib/machine.ts';
import {
  type Proc,
  start,
  stop,
  stopAll,
  stopEverythingOnExit,
  tail,
  trackLoader,
  untrackLoader,
} from './lib/processes.ts';
import { median } from './lib/stats.ts';
import { fmt, table } from './lib/table.ts';
import { parseWrk } from './lib/wrk.ts';

const UPSTREAM_URL = `http://127.0.0.1:${PORTS.upstream}`;

type Scenario = 'get' | 'post';
const SCENARIOS: Record<
  Scenario,
  { title: string; method: string; path: string; body: string | null; expect: string }
> = {
  get: { title: `GET ${GET_PATH}`, method: 'GET', path: GET_PATH, body: null, expect: ITEM_BODY },
  post: {
    title: `POST ${POST_PATH} (${Buffer.byteLength(CHARGE_REQUEST)}-byte JSON body)`,
    method: 'POST',
    path: POST_PATH,
    body: CHARGE_REQUEST,
    expect: CHARGE_BODY,
  },
};

interface Target {
  name: string;
  port: number;
  /** argv; run from the repository root, pinned to TARGET_CORE when taskset exists. */
  cmd: string[];
  env?: Record<string, string>;
  /** Extra ports the target listens on (checked free first). */
  extraPorts?: number[];
}

// ---------------------------------------------------------------- options

const HELP = `node bench/run.ts [options]   (make bench)

  --duration S        measured seconds per target and scenario (BENCH_DURATION, default 10)
  --warmup S          warm-up seconds before each measured run, not counted (BENCH_WARMUP, default 3)
  --connections N     client connections (BENCH_CONNECTIONS, default 50)
  --rounds N          run every target N times, interleaved; tables show medians and the CPU range
                      (BENCH_ROUNDS, default 1)
  --scenarios LIST    get,post (BENCH_SCENARIOS)
  --targets LIST      direct,floor,sluice,sluice+transformer,sluice+cache (BENCH_TARGETS)
  --target N:PORT:CMD an extra target: CMD runs through bash -c with BENCH_PORT and BENCH_UPSTREAM_URL
                      set, must listen on 127.0.0.1:PORT in the foreground (repeatable)
  --loadgen TOOL      wrk or autocannon (BENCH_LOADGEN; default wrk when on PATH)
  --no-compile        skip bench/compile.ts (BENCH_COMPILE=0)
  --rate-of-floor F   constant rate: F (0 < F <= 1) × the floor's full-load req/s, measured first
                      (BENCH_RATE_OF_FLOOR); wrk paces each connection (Lua delay), autocannon -R
`;

function options() {
  const { values } = parseArgs({
    options: {
      duration: { type: 'string' },
      warmup: { type: 'string' },
      connections: { type: 'string' },
      rounds: { type: 'string' },
      scenarios: { type: 'string' },
      targets: { type: 'string' },
      target: { type: 'string', multiple: true },
      loadgen: { type: 'string' },
      'no-compile': { type: 'boolean' },
      'rate-of-floor': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    process.stdout.write(HELP);
    process.exit(0);
  }
  const num = (flag: string | undefined, env: string, fallback: number, min: number) => {
    const raw = flag ?? process.env[env];
    if (raw === undefined || raw === '') return fallback;
    const n = Number(raw);
    if (!Number.isInteger(n) || n < min)
      throw new Error(`${env} / --${env.slice(6).toLowerCase()}: a whole number >= ${min}, not ${raw}`);
    return n;
  };
  const list = (raw: string | undefined) =>
    raw
      ?.split(',')
      .map((s) => s.trim())
      .filter(Boolean);
  const scenarios = list(values.scenarios ?? process.env.BENCH_SCENARIOS) ?? ['get', 'post'];
  for (const s of scenarios) if (!(s in SCENARIOS)) throw new Error(`unknown scenario ${s} (get, post)`);
  const extra: Target[] = (values.target ?? []).map((spec) => {
    const m = /^([^:]+):(\d+):(.+)$/s.exec(spec);
    if (!m) throw new Error(`--target: NAME:PORT:CMD, not ${JSON.stringify(spec)}`);
    const port = Number(m[2]);
    return {
      name: m[1],
      port,
      cmd: ['bash', '-c', m[3]],
      env: { BENCH_PORT: String(port), BENCH_UPSTREAM_URL: UPSTREAM_URL },
    };
  });
  const loadgen = values.loadgen ?? process.env.BENCH_LOADGEN ?? (onPath('wrk') ? 'wrk' : 'autocannon');
  if (loadgen !== 'wrk' && loadgen !== 'autocannon')
    throw new Error(`--loadgen: wrk or autocannon, not ${loadgen}`);
  const rateRaw = values['rate-of-floor'] ?? process.env.BENCH_RATE_OF_FLOOR;
  const rateOfFloor = rateRaw ? Number(rateRaw) : null;
  if (rateOfFloor !== null && !(rateOfFloor > 0 && rateOfFloor <= 1))
    throw new Error(`--rate-of-floor: a number in (0, 1], not ${rateRaw}`);
  return {
    rateOfFloor,
    duration: num(values.duration, 'BENCH_DURATION', 10, 1),
    warmup: num(values.warmup, 'BENCH_WARMUP', 3, 0),
    connections: num(values.connections, 'BENCH_CONNECTIONS', 50, 1),
    rounds: num(values.rounds, 'BENCH_ROUNDS', 1, 1),
    scenarios: scenarios as Scenario[],
    targets: list(values.targets ?? process.env.BENCH_TARGETS) ?? null,
    extra,
    loadgen: loadgen as 'wrk' | 'autocannon',
    compile: !values['no-compile'] && process.env.BENCH_COMPILE !== '0',
  };
}
type Options = ReturnType<typeof options>;

function builtinTargets(work: string): Target[] {
  const sluice = (name: string, port: number, yaml: string): Target => ({
    name,
    port,
    extraPorts: [PORTS.admin],
    cmd: [
      NODE,
      ...SLUICE_NODE_FLAGS,
      'bin/sluice.ts',
      'run',
      '-f',
      yaml,
      '--host',
      '127.0.0.1',
      '--port',
      String(port),
      '--admin-host',
      '127.0.0.1',
      '--admin-port',
      String(PORTS.admin),
      '--no-access-log',
      '--log-level',
      'warn',
      '--drain-timeout-ms',
      '2000',
      '--state-dir',
      join(work, `state-${port}`),
    ],
  });
  return [
    { name: 'direct', port: PORTS.direct, cmd: [NODE, 'bench/upstream.ts', String(PORTS.direct)] },
    {
      name: 'floor',
      port: PORTS.floor,
      cmd: [NODE, 'bench/floor.ts'],
      env: { BENCH_PORT: String(PORTS.floor), BENCH_UPSTREAM_URL: UPSTREAM_URL },
    },
    sluice('sluice', PORTS.sluice, 'bench/bench.yaml'),
    sluice('sluice+transformer', PORTS.sluiceTransformer, 'bench/bench-transformer.yaml'),
    sluice('sluice+cache', PORTS.sluiceCache, 'bench/bench-cache.yaml'),
  ];
}

// ---------------------------------------------------------------- processes

stopEverythingOnExit();

// ---------------------------------------------------------------- HTTP helpers

/** Waits until the target answers GET on the bench's item path. */
const waitReady = (p: Proc, port: number) => waitAnswer(p, `http://127.0.0.1:${port}${GET_PATH}`);

/** The target must give the upstream's exact bodies; a difference is a note that invalidates its rows. */
async function check(port: number): Promise<string[]> {
  const notes: string[] = [];
  for (const s of Object.values(SCENARIOS)) {
    try {
      const headers = s.body !== null ? { 'content-type': 'application/json' } : {};
      const r = await http(s.method, `http://127.0.0.1:${port}${s.path}`, s.body, { headers });
      if (r.status !== 200 || r.body !== s.expect)
        notes.push(`${s.method} ${s.path}: status ${r.status}, body ${JSON.stringify(r.body.slice(0, 120))}`);
    } catch (err) {
      notes.push(`${s.method} ${s.path}: ${(err as Error).message}`);
    }
  }
  return notes;
}

async function upstreamConnections(): Promise<number | null> {
  try {
    return (
      JSON.parse((await http('GET', `${UPSTREAM_URL}/__bench/stats`, null)).body) as { connections: number }
    ).connections;
  } catch {
    return null;
  }
}

// ---------------------------------------------------------------- load generators

interface LoadResult {
  requests: number;
  seconds: number;
  rps: number;
  p50ms: number | null;
  p99ms: number | null;
  non2xx: number;
  errors: number;
  output: string;
}

/** A constant rate: overall req/s, and for wrk the pause (ms) each connection takes between requests. */
interface Pace {
  rate: number;
  delayMs: number;
}

async function runLoad(
  opts: Options,
  work: string,
  port: number,
  scenario: Scenario,
  seconds: number,
  pace: Pace | null = null,
): Promise<LoadResult> {
  const s = SCENARIOS[scenario];
  const url = `http://127.0.0.1:${port}${s.path}`;
  let argv: string[];
  if (opts.loadgen === 'wrk') {
    argv = ['wrk', '-t1', `-c${opts.connections}`, `-d${seconds}s`, '--latency', '--timeout', '5s'];
    let lua = '';
    if (s.body !== null)
      lua += `wrk.method = "${s.method}"\nwrk.body = [[${s.body}]]\nwrk.headers["Content-Type"] = "application/json"\n`;
    // wrk's delay() is whole milliseconds: dithered, so the pauses average delayMs.
    if (pace !== null)
      lua +=
        `local d = ${pace.delayMs.toFixed(4)}\nlocal base = math.floor(d)\nlocal frac = d - base\n` +
        'function delay() if math.random() < frac then return base + 1 end return base end\n';
    if (lua !== '') {
      const file = join(work, `${scenario}-${pace === null ? 'full' : 'paced'}.lua`);
      writeFileSync(file, lua);
      argv.push('-s', file);
    }
    argv.push(url);
  } else {
    argv = [
      NODE,
      join(BENCH, 'node_modules/autocannon/autocannon.js'),
      '-c',
      String(opts.connections),
      '-d',
      String(seconds),
      '-t',
      '5',
      '-j',
      ...(pace === null ? [] : ['-R', String(Math.round(pace.rate))]),
    ];
    if (s.body !== null) argv.push('-m', s.method, '-H', 'content-type=application/json', '-b', s.body);
    argv.push(url);
  }
  argv = pinned(LOAD_CORE, argv);
  const child = spawn(argv[0], argv.slice(1), { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  trackLoader(child);
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => {
    out += d;
  });
  child.stderr.on('data', (d: Buffer) => {
    err += d;
  });
  const killer = setTimeout(() => child.kill('SIGKILL'), (seconds + 30) * 1000);
  const [code] = (await once(child, 'exit')) as [number | null];
  clearTimeout(killer);
  untrackLoader(child);
  if (code !== 0)
    throw new Error(`${opts.loadgen} exited with ${code}: ${err.slice(-2000)}${out.slice(-2000)}`);
  if (opts.loadgen === 'autocannon') return parseAutocannon(out);
  const wrk = parseWrk(out);
  return { ...wrk, rps: wrk.requests / wrk.seconds, output: out };
}

function parseAutocannon(out: string): LoadResult {
  const j = JSON.parse(out) as {
    requests: { total: number };
    duration: number;
    latency: { p50: number; p99: number };
    non2xx: number;
    errors: number;
    timeouts: number;
  };
  return {
    requests: j.requests.total,
    seconds: j.duration,
    rps: j.requests.total / j.duration,
    p50ms: j.latency.p50,
    p99ms: j.latency.p99,
    non2xx: j.non2xx,
    errors: j.errors,
    output: out,
  };
}

function ensureAutocannon(): void {
  if (existsSync(join(BENCH, 'node_modules/autocannon/autocannon.js'))) return;
  process.stderr.write(
    'bench: installing autocannon (the load generator when wrk is absent) into bench/node_modules\n',
  );
  const npm = join(dirname(NODE), 'npm');
  const r = spawnSync(existsSync(npm) ? npm : 'npm', ['ci', '--no-audit', '--no-fund', '--loglevel=error'], {
    cwd: BENCH,
    stdio: 'inherit',
  });
  if (r.status !== 0)
    throw new Error('npm ci in bench/ failed: install wrk (apt-get install wrk) or fix the npm install');
}

// ---------------------------------------------------------------- measuring

interface Row {
  target: string;
  scenario: Scenario;
  round: number;
  port: number;
  requests: number;
  seconds: number;
  rps: number;
  cpuUsPerReq: number;
  p50ms: number | null;
  p99ms: number | null;
  non2xx: number;
  errors: number;
  upstreamCpuUsPerReq: number;
  upstreamConnsOpened: number | null;
  loadCoreBusyPct: number;
  targetCoreBusyPct: number;
  foreignCpuPct: number;
  notes: string[];
  invalid: boolean;
}

async function measure(
  opts: Options,
  work: string,
  target: Target,
  proc: Proc,
  upstream: Proc,
  scenario: Scenario,
  notes: string[],
  round: number,
  rate: number | null = null,
): Promise<Row> {
  const tag = `${target.name} ${scenario}${opts.rounds > 1 ? ` (round ${round}/${opts.rounds})` : ''}`;
  // Paced: each connection waits C/rate between requests, less the time a request itself took,
  // which the warm-up measures (its achieved rate gives the period actually seen per connection).
  let pace: Pace | null = rate === null ? null : { rate, delayMs: (opts.connections * 1000) / rate };
  if (opts.warmup > 0) {
    process.stderr.write(`bench: ${tag}: warm-up ${opts.warmup} s\n`);
    const w = await runLoad(opts, work, target.port, scenario, opts.warmup, pace);
    if (pace !== null && w.rps > 0) {
      const taken = (opts.connections * 1000) / w.rps - pace.delayMs;
      pace = { rate: pace.rate, delayMs: Math.max(0, (opts.connections * 1000) / pace.rate - taken) };
    }
  }
  process.stderr.write(`bench: ${tag}: measuring ${opts.duration} s\n`);
  const conns0 = await upstreamConnections();
  const t0 = processTable();
  const target0 = treeTicks(proc.child.pid!, t0);
  const up0 = treeTicks(upstream.child.pid!, t0);
  const self0 = selfTicks();
  const cores0 = coreTicks();
  const load = await runLoad(opts, work, target.port, scenario, opts.duration, pace);
  const t1 = processTable();
  const target1 = treeTicks(proc.child.pid!, t1);
  const up1 = treeTicks(upstream.child.pid!, t1);
  const self1 = selfTicks();
  const cores1 = coreTicks();
  const conns1 = await upstreamConnections();

  const busy = (core: string) => {
    const a = cores0.get(core);
    const b = cores1.get(core);
    return a && b && b.total > a.total ? ((b.busy - a.busy) / (b.total - a.total)) * 100 : 0;
  };
  const all0 = cores0.get('cpu')!;
  const all1 = cores1.get('cpu')!;
  const nCores = Math.max(1, cores0.size - 1);
  const wallTicks = (all1.total - all0.total) / nCores;
  const foreign = all1.busy - all0.busy - (target1 - target0) - (up1 - up0) - (self1 - self0);
  const perReq = (ticks: number) => (load.requests > 0 ? ((ticks / HZ) * 1e6) / load.requests : Number.NaN);
  const rowNotes = [...notes];
  if (load.requests === 0) rowNotes.push('no request completed');
  if (load.non2xx > 0) rowNotes.push(`${load.non2xx} non-2xx`);
  if (load.errors > 0) rowNotes.push(`${load.errors} socket errors`);
  if (proc.exited) rowNotes.push('target exited during the run');
  return {
    target: target.name,
    scenario,
    round,
    port: target.port,
    requests: load.requests,
    seconds: load.seconds,
    rps: load.rps,
    cpuUsPerReq: perReq(target1 - target0),
    p50ms: load.p50ms,
    p99ms: load.p99ms,
    non2xx: load.non2xx,
    errors: load.errors,
    upstreamCpuUsPerReq: perReq(up1 - up0),
    upstreamConnsOpened: conns0 !== null && conns1 !== null ? conns1 - conns0 - 1 : null, // -1: the stats request itself
    loadCoreBusyPct: busy(`cpu${LOAD_CORE}`),
    targetCoreBusyPct: busy(`cpu${TARGET_CORE}`),
    foreignCpuPct: wallTicks > 0 ? Math.max(0, (foreign / wallTicks) * 100) : 0,
    notes: rowNotes,
    invalid: rowNotes.length > 0,
  };
}

// ---------------------------------------------------------------- output

/** One target and scenario over its rounds: medians, sums of failures, the CPU range. */
function aggregate(rows: Row[]) {
  const med = (f: (r: Row) => number | null) => median(rows.map((r) => f(r) ?? Number.NaN));
  const cpu = rows.map((r) => r.cpuUsPerReq);
  const conns = rows.map((r) => r.upstreamConnsOpened).filter((c) => c !== null);
  return {
    rounds: rows.length,
    cpuUsPerReq: med((r) => r.cpuUsPerReq),
    cpuMin: Math.min(...cpu),
    cpuMax: Math.max(...cpu),
    rps: med((r) => r.rps),
    p50ms: med((r) => r.p50ms),
    p99ms: med((r) => r.p99ms),
    non2xx: rows.reduce((a, r) => a + r.non2xx, 0),
    errors: rows.reduce((a, r) => a + r.errors, 0),
    upstreamCpuUsPerReq: med((r) => r.upstreamCpuUsPerReq),
    upstreamConnsOpened: conns.length ? Math.max(...conns) : null,
    targetCoreBusyPct: med((r) => r.targetCoreBusyPct),
    loadCoreBusyPct: med((r) => r.loadCoreBusyPct),
    foreignCpuPct: Math.max(...rows.map((r) => r.foreignCpuPct)),
    notes: [...new Set(rows.flatMap((r) => r.notes))],
    invalid: rows.some((r) => r.invalid),
  };
}
type Aggregate = ReturnType<typeof aggregate>;

function report(
  opts: Options,
  rows: Row[],
  failed: Map<string, string>,
  targets: Target[],
  rates: Record<string, number> | null,
) {
  const out: string[] = [];
  const summary: Record<
    string,
    Record<string, Aggregate & { cpuXfloor: number | null; rpsXfloor: number | null }>
  > = {};
  const many = opts.rounds > 1;
  for (const scenario of opts.scenarios) {
    const agg = new Map<string, Aggregate>();
    for (const t of targets) {
      const mine = rows.filter((r) => r.scenario === scenario && r.target === t.name);
      if (mine.length) agg.set(t.name, aggregate(mine));
    }
    const f = agg.get('floor');
    const floor = f && !f.invalid ? f : null;
    summary[scenario] = {};
    const body = targets.map((t) => {
      const r = agg.get(t.name);
      if (!r)
        return [
          t.name,
          ...Array((many ? 14 : 13) + (rates ? 1 : 0)).fill('-'),
          `FAILED: ${failed.get(t.name) ?? 'not run'}`,
        ];
      const cpuX = floor ? r.cpuUsPerReq / floor.cpuUsPerReq : null;
      const rpsX = floor ? r.rps / floor.rps : null;
      summary[scenario][t.name] = { ...r, cpuXfloor: cpuX, rpsXfloor: rpsX };
      const notes = [...r.notes];
      if (r.rounds < opts.rounds)
        notes.push(`${opts.rounds - r.rounds} round(s) failed: ${failed.get(t.name) ?? ''}`);
      return [
        t.name,
        fmt(r.cpuUsPerReq),
        ...(many ? [`${fmt(r.cpuMin)}–${fmt(r.cpuMax)}`] : []),
        cpuX === null ? '-' : `${fmt(cpuX, 2)}×`,
        fmt(r.rps, 0),
        rpsX === null ? '-' : `${fmt(rpsX, 2)}×`,
        fmt(r.p50ms, 2),
        fmt(r.p99ms, 2),
        ...(rates && floor?.p99ms != null && r.p99ms != null
          ? [`${r.p99ms >= floor.p99ms ? '+' : ''}${fmt(r.p99ms - floor.p99ms, 2)}`]
          : rates
            ? ['-']
            : []),
        String(r.non2xx),
        String(r.errors),
        fmt(r.upstreamCpuUsPerReq),
        r.upstreamConnsOpened === null ? '-' : String(r.upstreamConnsOpened),
        fmt(r.targetCoreBusyPct, 0),
        fmt(r.loadCoreBusyPct, 0),
        fmt(r.foreignCpuPct, 0),
        r.invalid || notes.length ? `INVALID: ${notes.join('; ')}` : '',
      ];
    });
    const rounds = many ? `, median of ${opts.rounds} rounds` : '';
    const paced = rates
      ? `, paced at ${fmt(rates[scenario], 0)} req/s (${opts.rateOfFloor} × the floor's full load)`
      : '';
    out.push(
      `\n${SCENARIOS[scenario].title} — ${opts.connections} connections, ${opts.duration} s measured after ${opts.warmup} s warm-up (${opts.loadgen})${rounds}${paced}\n`,
      table(
        [
          'target',
          'CPU µs/req',
          ...(many ? ['CPU range'] : []),
          '×floor',
          'req/s',
          '×floor',
          'p50 ms',
          'p99 ms',
          ...(rates ? ['p99 − floor ms'] : []),
          'non-2xx',
          'errors',
          'upstream µs/req',
          'upstream conns',
          'core1 busy %',
          'core0 busy %',
          'foreign %',
          'note',
        ],
        body,
      ),
    );
  }
  return { text: out.join('\n'), summary };
}

// ---------------------------------------------------------------- main

/** --rate-of-floor: the floor's full-load req/s per scenario (warm-up, then measured), times F. */
async function floorRates(opts: Options, work: string, upstream: Proc): Promise<Record<string, number>> {
  const floor = builtinTargets(work).find((t) => t.name === 'floor')!;
  const proc = start(
    'floor-full-load',
    pinned(TARGET_CORE, floor.cmd),
    join(work, 'floor-full-load.log'),
    floor.env,
  );
  const rates: Record<string, number> = {};
  try {
    await waitReady(proc, floor.port);
    for (const scenario of opts.scenarios) {
      const row = await measure(opts, work, floor, proc, upstream, scenario, [], 0);
      if (row.invalid || !(row.rps > 0))
        throw new Error(`the floor's full-load run failed: ${row.notes.join('; ')}`);
      rates[scenario] = row.rps * opts.rateOfFloor!;
      process.stderr.write(
        `bench: floor ${scenario} at full load: ${fmt(row.rps, 0)} req/s → paced runs at ${fmt(rates[scenario], 0)} req/s\n`,
      );
    }
  } finally {
    await stop(proc);
  }
  return rates;
}

async function main(): Promise<void> {
  const opts = options();
  if (!existsSync('/proc/self/stat')) throw new Error('bench: needs Linux /proc to count CPU time');
  const all = [...builtinTargets(''), ...opts.extra];
  const unknown = opts.targets?.filter((n) => !all.some((t) => t.name === n)) ?? [];
  if (unknown.length)
    throw new Error(`unknown target(s) ${unknown.join(', ')}: ${all.map((t) => t.name).join(', ')}`);
  if (opts.loadgen === 'autocannon') ensureAutocannon();

  const work = mkdtempSync(join(tmpdir(), 'sluice-bench-'));
  const targets = [...builtinTargets(work), ...opts.extra].filter(
    (t) => opts.targets === null || opts.targets.includes(t.name) || opts.extra.includes(t),
  );
  const ports = new Set([PORTS.upstream, ...targets.flatMap((t) => [t.port, ...(t.extraPorts ?? [])])]);
  const busyPorts = [];
  for (const port of ports) if (!(await portFree(port))) busyPorts.push(port);
  if (busyPorts.length)
    throw new Error(`port(s) ${busyPorts.join(', ')} on 127.0.0.1 are in use; the bench needs them free`);

  // This script and its helpers stay on the load core, with the load generator and the upstream.
  pinSelf();
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  const load0 = loadavg()[0];
  process.stderr.write(
    `bench: ${opts.loadgen}, ${opts.connections} connections, ${opts.warmup} s warm-up + ${opts.duration} s per run; ` +
      `targets ${targets.map((t) => t.name).join(', ')}; ${PIN ? 'pinned: targets on core 1, load + upstream on core 0' : 'NOT pinned (no taskset or one core)'}; logs in ${work}\n`,
  );

  const rows: Row[] = [];
  const failed = new Map<string, string>();
  const upstream = start(
    'upstream',
    pinned(LOAD_CORE, [NODE, 'bench/upstream.ts', String(PORTS.upstream)]),
    join(work, 'upstream.log'),
  );
  await waitReady(upstream, PORTS.upstream);

  const rates = opts.rateOfFloor === null ? null : await floorRates(opts, work, upstream);

  let failures = 0;
  for (let round = 1; round <= opts.rounds; round++) {
    for (const target of targets) {
      const proc = start(
        target.name,
        pinned(TARGET_CORE, target.cmd),
        join(work, `${target.name}.log`),
        target.env,
      );
      try {
        await waitReady(proc, target.port);
        const notes = await check(target.port);
        if (notes.length) process.stderr.write(`bench: ${target.name}: ${notes.join('; ')}\n`);
        for (const scenario of opts.scenarios)
          rows.push(
            await measure(
              opts,
              work,
              target,
              proc,
              upstream,
              scenario,
              notes,
              round,
              rates?.[scenario] ?? null,
            ),
          );
      } catch (err) {
        const message = (err as Error).message;
        process.stderr.write(`bench: ${target.name} failed: ${message}\n`);
        failed.set(target.name, message.split('\n')[0]);
        failures++;
      } finally {
        await stop(proc);
      }
      if (proc.exited && readFileSync(proc.log, 'utf8').trim()) {
        process.stderr.write(
          `bench: ${target.name} wrote to its log (${proc.log}):\n${tail(proc.log, 10)}\n`,
        );
      }
    }
  }
  await stop(upstream);

  const { text, summary } = report(opts, rows, failed, targets, rates);
  process.stdout.write(
    [
      text,
      '',
      "CPU µs/req: utime+stime of the target's process tree during the measured run / requests completed (lower is better).",
      '×floor: ratio to bench/floor.ts (node:http + undici, no framework) measured in this run.',
      "core1: the target's core; core0: the load generator and the upstream. foreign %: CPU used by other",
      'processes during the run, % of one core: above a few %, distrust req/s and latency.',
      `Load average at start: ${load0.toFixed(2)}.`,
      '',
    ].join('\n'),
  );

  let compile: unknown = null;
  if (opts.compile) {
    const outFile = join(work, 'compile.json');
    process.stdout.write('\n');
    const argv = pinned(TARGET_CORE, [NODE, 'bench/compile.ts', '--out', outFile]);
    const r = spawnSync(argv[0], argv.slice(1), {
      cwd: ROOT,
      stdio: 'inherit',
      env: { ...process.env, NODE_ENV: 'production' },
    });
    if (r.status === 0 && existsSync(outFile)) compile = JSON.parse(readFileSync(outFile, 'utf8'));
    else process.stderr.write(`bench: bench/compile.ts failed (exit ${r.status})\n`);
  }

  const resultsDir = join(BENCH, 'results');
  mkdirSync(resultsDir, { recursive: true });
  const file = join(resultsDir, `${stamp}.json`);
  writeFileSync(
    file,
    `${JSON.stringify(
      {
        stamp,
        machine: {
          cpus: cpus().length,
          model: cpus()[0]?.model,
          node: process.version,
          loadavgAtStart: load0,
          pinned: PIN,
        },
        params: { ...opts, extra: opts.extra.map((t) => ({ name: t.name, port: t.port, cmd: t.cmd[2] })) },
        failed: Object.fromEntries(failed),
        summary,
        rows,
        compile,
      },
      null,
      2,
    )}\n`,
  );
  process.stdout.write(`\nresults: ${file}\n`);
  if (failures || rows.some((r) => r.invalid)) {
    process.stdout.write(`some rows are INVALID or failed: the targets' logs are kept in ${work}\n`);
    process.exitCode = 1;
  } else rmSync(work, { recursive: true, force: true });
}

main().catch(async (err: Error) => {
  process.stderr.write(`bench: ${err.message}\n`);
  await stopAll();
  process.exit(1);
});
