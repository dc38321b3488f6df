/** Load generators for the proxy bench: wrk (preferred) or autocannon, at full load or a constant rate. */
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { BENCH, LOAD_CORE, NODE, pinned, ROOT } from '../lib/machine.ts';
import { trackLoader, untrackLoader } from '../lib/processes.ts';
import { parseWrk } from '../lib/wrk.ts';
import { SCENARIOS, type Scenario } from './targets.ts';
import type { Options } from './options.ts';

export interface LoadResult {
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
export interface Pace {
  rate: number;
  delayMs: number;
}

export async function runLoad(
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
    for (const [name, value] of opts.headers)
      lua += `wrk.headers[${luaString(name)}] = ${luaString(value)}\n`;
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
    for (const [name, value] of opts.headers) argv.push('-H', `${name}=${value}`);
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

/** A Lua string literal: for printable ASCII (what a header holds), JSON's quoting is Lua's. */
const luaString = (s: string) => JSON.stringify(s);

export function parseAutocannon(out: string): LoadResult {
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

export function ensureAutocannon(): void {
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
