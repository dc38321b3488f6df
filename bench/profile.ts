/**
 * Where a proxied request's CPU goes: the data plane as the peers harness runs it
 * (bench/peers-target.sh, on the target core) under wrk's load (one thread, 50 connections, on
 * the load core with the upstream, bench/upstream.ts), profiled with `node --cpu-prof`, its
 * samples read back for the measured seconds only and summed by layer: node:http, sockets and
 * streams, undici, ioredis, jose, Sluice's own code by folder, V8 and GC. Each layer as a share of
 * the busy samples and as µs per request (the main thread's time; the busy share times the
 * seconds over wrk's requests). With `--vs`, a second target in the same run, each layer's
 * difference: what the chain adds to the plain proxy, layer by layer.
 *
 *   node bench/profile.ts [--target plain|chain|chain-sync|floor] [--vs …] [--scenario get|post]
 *                         [--rounds 4] [--seconds 5] [--warmup 3] [--connections 50] [--top 15]
 *
 * Both targets run at once (idle but one), each measured for --seconds per round, in turns;
 * each one's figures are the sums over its rounds.
 *
 * The window is cut from the profile by time: V8's sample times and process.hrtime here read the
 * same clock (CLOCK_MONOTONIC). Profiling costs: a sampled process runs slower (the default 1 ms interval here costs a few
 * per cent), so read the shares and the differences, not the req/s. The chain needs Redis on
 * 127.0.0.1:6379 (bench/chain.sh's chain: jwt RS256 + rate-limiting on Redis + request-transformer;
 * chain-sync: its rate limit with syncMs 50).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { CHARGE_BODY } from './fixtures.ts';
import { LOAD_CORE, pinned, ROOT, TARGET_CORE } from './lib/machine.ts';
import { type Proc, start, stop, stopEverythingOnExit, tail } from './lib/processes.ts';
import { parseWrk, type WrkFigures } from './lib/wrk.ts';

const { values: o } = parseArgs({
  options: {
    target: { type: 'string', default: 'plain' },
    vs: { type: 'string' },
    scenario: { type: 'string', default: 'get' },
    seconds: { type: 'string', default: '5' },
    rounds: { type: 'string', default: '4' },
    warmup: { type: 'string', default: '3' },
    connections: { type: 'string', default: '50' },
    top: { type: 'string', default: '15' },
  },
});
const TARGETS = ['plain', 'chain', 'chain-sync', 'floor'] as const;
type Target = (typeof TARGETS)[number];
for (const t of [o.target, o.vs])
  if (t !== undefined && !TARGETS.includes(t as Target))
    throw new Error(`--target/--vs: ${TARGETS.join(', ')}, not ${t}`);
if (o.scenario !== 'get' && o.scenario !== 'post')
  throw new Error(`--scenario: get or post, not ${o.scenario}`);
const seconds = Number(o.seconds);
const rounds = Number(o.rounds);
const warmup = Number(o.warmup);

const dir = mkdtempSync(join(tmpdir(), 'sluice-profile-'));
// Redis on the load core for the run (bench/redis-core.sh says why), put back at the end.
const restoreRedis = spawnSync('bash', [join(ROOT, 'bench/redis-core.sh')], {
  encoding: 'utf8',
}).stdout.trim();
const cleanUp = () => {
  rmSync(dir, { recursive: true, force: true });
  if (restoreRedis !== '') spawnSync('bash', ['-c', restoreRedis]);
};
stopEverythingOnExit(async () => cleanUp());
const UP_PORT = 18_300;
/** The peers harness's floor: node:http + an undici Pool, nothing else (its own node_modules: peers.sh installs them). */
const FLOOR = join(ROOT, '../shared/bench/peers/bare-node-undici.js');
const token = spawnSync(process.execPath, [join(ROOT, 'bench/make-jwt.ts'), dir], {
  encoding: 'utf8',
}).stdout.trim();
writeFileSync(join(dir, 'token'), token); // what peers-target.sh --chain reads, as chain.sh writes it
const up = start(
  'upstream',
  pinned(LOAD_CORE, [process.execPath, join(ROOT, 'bench/upstream.ts'), String(UP_PORT)]),
  join(dir, 'upstream.log'),
);

const monotonicUs = () => Number(process.hrtime.bigint() / 1000n);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function ready(url: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    const ok = await fetch(url).then(
      (r) => r.status < 500,
      () => false,
    );
    if (ok) return;
    await sleep(100);
  }
  throw new Error(`${url} never answered`);
}

/** wrk for `s` seconds as the harness runs it (its Lua script, the same headers). */
function wrk(port: number, s: number): string {
  const path = o.scenario === 'post' ? '/charges' : '/api/items/42';
  const argv = pinned(LOAD_CORE, [
    'wrk',
    '-t1',
    `-c${o.connections}`,
    '--latency',
    '-H',
    `Authorization: Bearer ${token}`,
    '-s',
    join(ROOT, '../shared/bench/lib/wrk.lua'),
    `-d${s}s`,
    `http://127.0.0.1:${port}${path}`,
  ]);
  const env = { ...process.env, BENCH_METHOD: o.scenario.toUpperCase(), BENCH_BODY: CHARGE_BODY };
  const r = spawnSync(argv[0], argv.slice(1), { encoding: 'utf8', env });
  if (r.status !== 0) throw new Error(`wrk failed: ${r.stderr}`);
  return r.stdout;
}

interface Profile {
  nodes: {
    id: number;
    callFrame: { functionName: string; url: string; lineNumber: number };
    children?: number[];
  }[];
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}

interface Measured {
  target: Target;
  requests: number;
  reqPerSec: number;
  p99ms: number | null;
  /** µs of busy samples in the measured window. */
  busyUs: number;
  /** Self time by layer, µs. */
  self: Map<string, number>;
  /** Inclusive time by layer (a sample counts once for each layer on its stack), µs. */
  inclusive: Map<string, number>;
  /** Self time by function, µs. */
  functions: Map<string, number>;
}

interface Running {
  target: Target;
  port: number;
  proc: Proc;
  profDir: string;
  /** The measured windows on the profile's clock (µs), and wrk's figures for each. */
  windows: { from: number; to: number; figures: WrkFigures }[];
}

/** A target started under the profiler, answering. */
async function startTarget(target: Target, port: number): Promise<Running> {
  const profDir = join(dir, `prof-${target}`);
  const env = {
    BENCH_PORT: String(port),
    BENCH_UPSTREAM_URL: `http://127.0.0.1:${UP_PORT}`,
    // Samples every 1 ms (V8's default, to keep the profiler's own cost small).
    // BENCH_NODE_FLAGS of this environment too (compare V8 settings: the floor does not take them).
    BENCH_NODE_FLAGS: `${process.env.BENCH_NODE_FLAGS ?? ''} --cpu-prof --cpu-prof-dir=${profDir}`,
    TMPDIR: dir,
  };
  const args = target === 'chain' ? ['--chain', dir] : target === 'chain-sync' ? ['--chain', dir, '50'] : [];
  const argv =
    target === 'floor'
      ? // The harness's floor as it runs it; SIGTERM made an exit, so V8 writes the profile.
        [
          process.execPath,
          '--import=data:text/javascript,process.on("SIGTERM",()=>process.exit(0))',
          '--cpu-prof',
          `--cpu-prof-dir=${profDir}`,
          FLOOR,
        ]
      : ['bash', join(ROOT, 'bench/peers-target.sh'), ...args];
  const proc = start(`sluice-${target}`, pinned(TARGET_CORE, argv), join(dir, `${target}.log`), env);
  try {
    await ready(`http://127.0.0.1:${port}/api/items/42`);
  } catch (err) {
    process.stderr.write(tail(join(dir, `${target}.log`)));
    throw err;
  }
  wrk(port, warmup);
  return { target, port, proc, profDir, windows: [] };
}

/** One measured window of a running target. */
function window(r: Running): void {
  // On the profile's clock, less a fifth of a second at each end (wrk's connections opening and closing).
  const from = monotonicUs() + 200_000;
  const figures = parseWrk(wrk(r.port, seconds));
  const to = monotonicUs() - 200_000;
  if (figures.non2xx > 0 || figures.errors > 0)
    throw new Error(`${r.target}: ${figures.non2xx} non-2xx answers, ${figures.errors} socket errors`);
  r.windows.push({ from, to, figures });
}

/** Stops the target (SIGTERM: it drains and exits, and V8 writes the profile) and sums its windows. */
async function finish(r: Running): Promise<Measured> {
  await stop(r.proc);
  const file = readdirSync(r.profDir).find((f) => f.endsWith('.cpuprofile'));
  if (file === undefined) throw new Error(`${r.target}: no profile written in ${r.profDir}`);
  const profile = JSON.parse(readFileSync(join(r.profDir, file), 'utf8')) as Profile;
  const requests = r.windows.reduce((n, w) => n + w.figures.requests, 0);
  const secs = r.windows.reduce((n, w) => n + w.figures.seconds, 0);
  const p99s = r.windows.map((w) => w.figures.p99ms ?? Number.NaN).sort((x, y) => x - y);
  return {
    target: r.target,
    requests,
    reqPerSec: requests / secs,
    p99ms: p99s[Math.floor(p99s.length / 2)],
    ...summarize(
      profile,
      r.windows.map((w) => [w.from, w.to]),
    ),
  };
}

/** The layer a frame belongs to, by its script (or, for V8's own entries, its name). */
export function layerOf(fn: string, url: string): string {
  if (fn === '(garbage collector)') return 'GC';
  if (fn === '(program)') return 'V8 (program)';
  if (fn === '(idle)') return 'idle';
  if (url === '') {
    if (/^write(v|Buffer|Utf8String|Latin1String)$/.test(fn)) return 'socket writes (syscalls)';
    return 'native (other)';
  }
  const pkg = /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url)?.[1];
  if (pkg !== undefined) {
    if (['ioredis', 'redis-parser', 'denque', 'cluster-key-slot', 'standard-as-callback'].includes(pkg))
      return 'ioredis';
    return pkg;
  }
  const own = /\/(dataplane|controller)\/(.+)$/.exec(url);
  if (own !== null) {
    const parts = own[2].split('/');
    // Plugins each by name (dataplane/plugins/jwt/…), the rest by folder.
    const where =
      parts[0] === 'plugins' && parts.length > 2
        ? `plugins/${parts[1]}`
        : parts.length > 1
          ? parts[0]
          : parts[0].replace(/\.ts$/, '');
    return `sluice: ${where}`;
  }
  if (/^node:(_http_|internal\/http)/.test(url)) return 'node:http';
  if (/^node:(net|stream|internal\/streams|internal\/stream_base_commons|internal\/net)/.test(url))
    return 'node: sockets, streams';
  if (/^node:(internal\/)?(crypto|internal\/crypto)/.test(url)) return 'node: crypto';
  if (/^node:(internal\/process\/task_queues|internal\/timers|timers)/.test(url))
    return 'node: ticks, timers';
  if (url.startsWith('node:')) return 'node (other)';
  return 'other';
}

/** The profile's samples within the windows (µs of CLOCK_MONOTONIC), summed by layer and by function. */
export function summarize(
  p: Profile,
  windows: readonly (readonly [number, number])[],
): Omit<Measured, 'target' | 'requests' | 'reqPerSec' | 'p99ms'> {
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  // Sample times (V8's ticks: CLOCK_MONOTONIC in µs, the clock of process.hrtime here too).
  const times: number[] = [];
  let t = p.startTime;
  for (const d of p.timeDeltas) {
    t += d;
    times.push(t);
  }
  const self = new Map<string, number>();
  const inclusive = new Map<string, number>();
  const functions = new Map<string, number>();
  const add = (m: Map<string, number>, k: string, v: number) => m.set(k, (m.get(k) ?? 0) + v);
  let busyUs = 0;
  p.samples.forEach((id, i) => {
    if (!windows.some(([from, to]) => times[i] >= from && times[i] < to)) return;
    const dt = p.timeDeltas[i + 1] ?? 0; // a sample stands for the time until the next
    const node = byId.get(id);
    if (node === undefined) return;
    const { functionName, url, lineNumber } = node.callFrame;
    const layer = layerOf(functionName, url);
    if (layer === 'idle') return;
    busyUs += dt;
    add(self, layer, dt);
    add(
      functions,
      `${functionName || '(anonymous)'} ${url.replace(/^.*\/(node_modules|dataplane)\//, '$1/')}:${lineNumber + 1}`,
      dt,
    );
    const seen = new Set<string>();
    for (let n: number | undefined = id; n !== undefined; n = parent.get(n)) {
      const f = byId.get(n)?.callFrame;
      if (f !== undefined) seen.add(layerOf(f.functionName, f.url));
    }
    for (const l of seen) add(inclusive, l, dt);
  });
  return { busyUs, self, inclusive, functions };
}

const pct = (v: number, all: number) => `${((100 * v) / all).toFixed(1)} %`;
const perReq = (m: Measured, v: number) => v / m.requests;

function report(ms: Measured[]): void {
  for (const m of ms)
    process.stdout.write(
      `${m.target} ${o.scenario}: ${m.requests} requests, ${Math.round(m.reqPerSec)} req/s, p99 ${m.p99ms} ms; ` +
        `main thread busy ${(m.busyUs / 1e6).toFixed(2)} s = ${(m.busyUs / m.requests).toFixed(1)} µs/req (profiled)\n`,
    );
  const layers = [...new Set(ms.flatMap((m) => [...m.self.keys()]))].sort(
    (a, b) => (ms[0].self.get(b) ?? 0) - (ms[0].self.get(a) ?? 0),
  );
  const head = ['layer (self time)', ...ms.flatMap((m) => [`${m.target} share`, `${m.target} µs/req`])];
  if (ms.length === 2) head.push(`${ms[0].target} − ${ms[1].target} µs/req`);
  const rows = layers.map((l) => {
    const cells = ms.flatMap((m) => [
      pct(m.self.get(l) ?? 0, m.busyUs),
      perReq(m, m.self.get(l) ?? 0).toFixed(2),
    ]);
    if (ms.length === 2)
      cells.push((perReq(ms[0], ms[0].self.get(l) ?? 0) - perReq(ms[1], ms[1].self.get(l) ?? 0)).toFixed(2));
    return [l, ...cells];
  });
  table(head, rows);
  process.stdout.write(
    '\nInclusive (a sample counts for every layer on its stack): sluice and library layers\n',
  );
  const inc = [...new Set(ms.flatMap((m) => [...m.inclusive.keys()]))]
    .filter((l) => l.startsWith('sluice') || !/^(node|V8|GC|native|socket|other)/.test(l))
    .sort((a, b) => (ms[0].inclusive.get(b) ?? 0) - (ms[0].inclusive.get(a) ?? 0));
  table(
    ['layer (inclusive)', ...ms.flatMap((m) => [`${m.target} share`, `${m.target} µs/req`])],
    inc.map((l) => [
      l,
      ...ms.flatMap((m) => [
        pct(m.inclusive.get(l) ?? 0, m.busyUs),
        perReq(m, m.inclusive.get(l) ?? 0).toFixed(2),
      ]),
    ]),
  );
  for (const m of ms) {
    process.stdout.write(`\nTop functions (self), ${m.target}:\n`);
    const top = [...m.functions].sort((a, b) => b[1] - a[1]).slice(0, Number(o.top));
    table(
      ['function', 'share', 'µs/req'],
      top.map(([f, v]) => [f, pct(v, m.busyUs), perReq(m, v).toFixed(2)]),
    );
  }
}

function table(head: string[], rows: string[][]): void {
  const w = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (r: string[]) =>
    `| ${r.map((c, i) => (i === 0 ? c.padEnd(w[i]) : c.padStart(w[i]))).join(' | ')} |\n`;
  process.stdout.write(line(head) + line(w.map((n) => '-'.repeat(n))) + rows.map(line).join(''));
}

try {
  await ready(`http://127.0.0.1:${UP_PORT}/api/items/1`);
  const order = [o.target as Target, ...(o.vs ? [o.vs as Target] : [])];
  const running: Running[] = [];
  for (const [i, t] of order.entries()) running.push(await startTarget(t, 18_310 + 2 * i));
  // Rounds alternate the targets, seconds apart: both see the same machine, which here moves by
  // ±25 % from one minute to the next.
  for (let round = 0; round < rounds; round++) for (const r of running) window(r);
  const results: Measured[] = [];
  for (const r of running) results.push(await finish(r));
  report(results);
} finally {
  await stop(up);
  cleanUp();
}
