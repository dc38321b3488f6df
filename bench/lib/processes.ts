/**
 * The processes a bench starts: each in its own process group (stopping it stops whatever it
 * started), output to a log file, NODE_ENV=production. Everything started is stopped on exit,
 * on error and on Ctrl-C (TERM to the group, KILL after 5 s).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { ROOT } from './machine.ts';

export interface Proc {
  name: string;
  child: ChildProcess;
  log: string;
  exited: boolean;
}

const procs = new Set<Proc>();
/** Load generator runs under way (not in their own group: a Ctrl-C reaches them too). */
const loaders = new Set<ChildProcess>();

/** Starts argv in its own process group, from the repository root, output to the file `log`. */
export function start(name: string, argv: string[], log: string, env: Record<string, string> = {}): Proc {
  const fd = openSync(log, 'a');
  const child = spawn(argv[0], argv.slice(1), {
    cwd: ROOT,
    env: { ...process.env, NODE_ENV: 'production', ...env },
    stdio: ['ignore', fd, fd],
    detached: true,
  });
  closeSync(fd);
  const p: Proc = { name, child, log, exited: false };
  child.on('exit', () => {
    p.exited = true;
  });
  child.on('error', () => {
    p.exited = true;
  });
  procs.add(p);
  return p;
}

/** A load generator: killed first when the bench stops. */
export function trackLoader(child: ChildProcess): void {
  loaders.add(child);
}

export function untrackLoader(child: ChildProcess): void {
  loaders.delete(child);
}

function killGroup(p: Proc, signal: NodeJS.Signals): void {
  if (p.child.pid === undefined) return;
  try {
    process.kill(-p.child.pid, signal);
  } catch {
    // already gone
  }
}

/** TERM to the process group, KILL after 5 s. */
export async function stop(p: Proc): Promise<void> {
  if (!p.exited) {
    killGroup(p, 'SIGTERM');
    const timer = new Promise<void>((r) => setTimeout(r, 5_000).unref());
    await Promise.race([once(p.child, 'exit'), timer]);
  }
  killGroup(p, 'SIGKILL');
  procs.delete(p);
}

export async function stopAll(): Promise<void> {
  for (const c of loaders) c.kill('SIGKILL');
  await Promise.all([...procs].map(stop));
}

/**
 * On exit, KILL whatever is left; on SIGINT, SIGTERM or SIGHUP, stop everything, run `after`
 * (e.g. delete the bench's Redis keys) and exit 130.
 */
export function stopEverythingOnExit(after: () => Promise<unknown> = async () => {}): void {
  process.on('exit', () => {
    for (const c of loaders) c.kill('SIGKILL');
    for (const p of procs) killGroup(p, 'SIGKILL');
  });
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.on(sig, () => {
      process.stderr.write(`\nbench: ${sig}, stopping everything it started\n`);
      stopAll()
        .then(after)
        .finally(() => process.exit(130));
    });
  }
}

/** The last lines of a log file. */
export function tail(file: string, lines = 15): string {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}
