/**
 * `sluice run` as a child process, for tests that need real processes: several replicas on one
 * Redis, SIGKILL in the middle of a request, a data plane whose Redis stalls. Each process gets
 * free loopback ports, its own temporary directory (the YAML file and the state dir) and
 * is waited on until its admin /readyz answers 200, within a bound.
 *
 * No orphans: every process started here is tracked and killed (SIGKILL) after each test file
 * (afterAll, registered when this module is loaded by a test file) and when the test worker
 * exits. Where `setpriv` exists, the child also gets SIGKILL from the kernel if the test
 * worker dies without running its hooks (parent-death signal).
 *
 * Also: reading a value from the Prometheus text of /metrics, and a process's resident memory.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Agent, fetch as undiciFetch } from 'undici';
import { afterAll } from 'vitest';
import { freePort } from './servers.ts';

const ROOT = resolve(import.meta.dirname, '../..');
const SLUICE = [
  '--disable-warning=ExperimentalWarning',
  '--disable-warning=MaxListenersExceededWarning',
  join(ROOT, 'bin/sluice.ts'),
];
/** Last bytes of a child's stdout/stderr kept for error messages. */
const KEEP_OUTPUT = 64 * 1024;

export interface SluiceOptions {
  /** The configuration: GatewayRoute/GatewayPlugin YAML documents. */
  yaml: string;
  /** Extra `sluice run` flags (--redis …); they come after the defaults, so they can override them. */
  args?: string[];
  /** Bound on the wait for /readyz (default 15 s). */
  readyTimeoutMs?: number;
  /** Default 'warn'. */
  logLevel?: string;
  /** Default 't'. */
  adminToken?: string;
  env?: NodeJS.ProcessEnv;
}

export interface SluiceProcess {
  proxyUrl: string;
  adminUrl: string;
  proxyPort: number;
  adminPort: number;
  process: ChildProcess;
  /** Resolves when the process has exited (with its exit code, or the signal that ended it). */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** The last 64 KB the process wrote to stderr / stdout. */
  stderr(): string;
  stdout(): string;
  /** Sends a signal; for SIGKILL, resolves once the process is gone. */
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** SIGTERM, then SIGKILL if it has not exited within `graceMs` (default 5 s); resolves when gone. */
  stop(graceMs?: number): Promise<void>;
}

const running = new Set<LaunchedProcess>();
const dirs = new Set<string>();

const hasSetpriv =
  process.platform === 'linux' && spawnSync('setpriv', ['--pdeathsig', 'KILL', 'true']).status === 0;

function alive(p: ChildProcess): boolean {
  return p.exitCode === null && p.signalCode === null;
}

function tail(buf: string, chunk: string): string {
  const s = buf + chunk;
  return s.length > KEEP_OUTPUT ? s.slice(s.length - KEEP_OUTPUT) : s;
}

/** Starts `sluice run` on free loopback ports and waits (bounded) until its admin /readyz answers 200. */
export async function startSluice(opts: SluiceOptions): Promise<SluiceProcess> {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-proc-'));
  dirs.add(dir);
  const file = join(dir, 'gateway.yaml');
  writeFileSync(file, opts.yaml);
  const proxyPort = await freePort();
  let adminPort = await freePort();
  while (adminPort === proxyPort) adminPort = await freePort();
  const args = [
    ...SLUICE,
    'run',
    '-f',
    file,
    '--host',
    '127.0.0.1',
    '--port',
    String(proxyPort),
    '--admin-host',
    '127.0.0.1',
    '--admin-port',
    String(adminPort),
    '--state-dir',
    join(dir, 'state'),
    '--admin-token',
    opts.adminToken ?? 't',
    '--log-level',
    opts.logLevel ?? 'warn',
    '--no-access-log',
    '--drain-timeout-ms',
    '2000',
    ...(opts.args ?? []),
  ];
  const proc = await launch(args, `http://127.0.0.1:${adminPort}/readyz`, dir, {
    what: 'sluice run',
    readyTimeoutMs: opts.readyTimeoutMs,
    env: opts.env,
  });
  return {
    ...proc,
    proxyUrl: `http://127.0.0.1:${proxyPort}`,
    adminUrl: `http://127.0.0.1:${adminPort}`,
    proxyPort,
    adminPort,
  };
}

export interface LaunchedProcess
  extends Omit<SluiceProcess, 'proxyUrl' | 'adminUrl' | 'proxyPort' | 'adminPort'> {}

/**
 * Any `sluice` command as a tracked child process, waited on (bounded) until `readyUrl`
 * answers 200. `dir` is removed when the process is stopped (null: nothing to remove).
 */
export async function launch(
  sluiceArgs: string[],
  readyUrl: string,
  dir: string | null,
  opts: {
    what?: string;
    readyTimeoutMs?: number;
    env?: NodeJS.ProcessEnv;
    /** An https readyUrl whose certificate is not checked, as the kubelet's HTTPS probes do. */
    insecureTls?: boolean;
  } = {},
): Promise<LaunchedProcess> {
  const what = opts.what ?? 'sluice';
  const args = sluiceArgs[0] === SLUICE[0] ? sluiceArgs : [...SLUICE, ...sluiceArgs];
  const [cmd, argv] = hasSetpriv
    ? ['setpriv', ['--pdeathsig', 'KILL', process.execPath, ...args]]
    : [process.execPath, args];
  const child = spawn(cmd, argv, {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...opts.env },
  });
  let err = '';
  let out = '';
  child.stderr!.setEncoding('utf8').on('data', (d: string) => {
    err = tail(err, d);
  });
  child.stdout!.setEncoding('utf8').on('data', (d: string) => {
    out = tail(out, d);
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('exit', (code, signal) => resolve({ code, signal }));
    child.once('error', () => resolve({ code: null, signal: null }));
  });
  let spawnError: Error | null = null;
  child.once('error', (e) => {
    spawnError = e;
  });

  const gone = async () => {
    if (child.exitCode === null && child.signalCode === null && spawnError === null) await exited;
  };
  const proc: LaunchedProcess = {
    process: child,
    exited,
    stderr: () => err,
    stdout: () => out,
    async kill(signal = 'SIGKILL') {
      if (!alive(child)) return;
      child.kill(signal);
      if (signal === 'SIGKILL') await gone();
    },
    async stop(graceMs = 5_000) {
      try {
        if (!alive(child)) return;
        child.kill('SIGCONT'); // in case a test stopped it
        child.kill('SIGTERM');
        const timer = sleep(graceMs).then(() => 'timeout' as const);
        if ((await Promise.race([exited, timer])) === 'timeout' && alive(child)) child.kill('SIGKILL');
        await gone();
      } finally {
        running.delete(proc);
        if (dir !== null) {
          rmSync(dir, { recursive: true, force: true });
          dirs.delete(dir);
        }
      }
    },
  };
  running.add(proc);

  const until = Date.now() + (opts.readyTimeoutMs ?? 15_000);
  const insecure = opts.insecureTls ? new Agent({ connect: { rejectUnauthorized: false } }) : undefined;
  let last = '';
  for (;;) {
    if (spawnError !== null || !alive(child)) {
      await proc.stop();
      throw new Error(
        `${what} exited before it was ready (${spawnError ?? `code ${child.exitCode}, signal ${child.signalCode}`})\n` +
          `stderr:\n${err}\nstdout:\n${out}`,
      );
    }
    try {
      const r = await undiciFetch(readyUrl, { signal: AbortSignal.timeout(1_000), dispatcher: insecure });
      last = `${r.status} ${await r.text()}`;
      if (r.status === 200) {
        await insecure?.close();
        return proc;
      }
    } catch (e) {
      last = String((e as Error).cause ?? e);
    }
    if (Date.now() >= until) {
      await proc.stop(1_000);
      throw new Error(
        `${what} was not ready within ${opts.readyTimeoutMs ?? 15_000} ms (last /readyz: ${last})\n` +
          `stderr:\n${err}\nstdout:\n${out}`,
      );
    }
    await sleep(50);
  }
}

/** Stops every process still running (SIGTERM, SIGKILL after a bound). */
export async function stopAllSluice(graceMs = 3_000): Promise<void> {
  await Promise.allSettled([...running].map((p) => p.stop(graceMs)));
}

// Test-file cleanup: whatever a failing test left running is stopped after the file.
afterAll(() => stopAllSluice(), 15_000);
// Last resort: the worker exits (or is torn down) with children still alive.
process.once('exit', () => {
  for (const p of running) if (alive(p.process)) p.process.kill('SIGKILL');
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** The text of GET /metrics on an admin URL. */
export async function fetchMetrics(adminUrl: string): Promise<string> {
  const r = await fetch(`${adminUrl}/metrics`, { signal: AbortSignal.timeout(5_000) });
  if (r.status !== 200) throw new Error(`GET ${adminUrl}/metrics answered ${r.status}`);
  return r.text();
}

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** The samples of a Prometheus text exposition (comments skipped; label values unescaped). */
export function parseMetrics(text: string): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\d+)?$/.exec(line);
    if (m === null) continue;
    const labels: Record<string, string> = {};
    if (m[2]) {
      const re = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;
      for (let l = re.exec(m[2]); l !== null; l = re.exec(m[2]))
        labels[l[1]] = l[2].replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
    }
    out.push({ name: m[1], labels, value: Number(m[3]) });
  }
  return out;
}

/**
 * The sum of every sample named `name` whose labels include `labels` (0 when none matches):
 * metricValue(text, 'sluice_idempotency_requests_total', { outcome: 'executed' }) adds up
 * every route.
 */
export function metricValue(text: string, name: string, labels: Record<string, string> = {}): number {
  let sum = 0;
  for (const s of parseMetrics(text)) {
    if (s.name !== name) continue;
    if (Object.entries(labels).every(([k, v]) => s.labels[k] === v)) sum += s.value;
  }
  return sum;
}

/** metricValue on a live process's /metrics. */
export async function readMetric(
  adminUrl: string,
  name: string,
  labels: Record<string, string> = {},
): Promise<number> {
  return metricValue(await fetchMetrics(adminUrl), name, labels);
}

/** Resident memory of a process in bytes, from /proc (Linux); null when unknown or gone. */
export function rssBytes(pid: number | undefined): number | null {
  if (pid === undefined) return null;
  try {
    const m = /^VmRSS:\s+(\d+)\s+kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : null;
  } catch {
    return null;
  }
}
