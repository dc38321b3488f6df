/** The machine the benches run on: where things are, clock ticks, and CPU pinning (taskset). */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { join, resolve } from 'node:path';

/** bench/ and the repository root. */
export const BENCH = resolve(import.meta.dirname, '..');
export const ROOT = resolve(BENCH, '..');
export const NODE = process.execPath;
/**
 * The Node flags on bin/sluice.ts's #! line: the installed binary and the image start with them,
 * so the benches start the data plane with them too (V8's young-generation size, for one).
 */
export const SLUICE_NODE_FLAGS = (
  /^#!.*[/ ]node(.*)$/m.exec(readFileSync(join(ROOT, 'bin/sluice.ts'), 'utf8').split('\n')[0])?.[1] ?? ''
)
  .split(' ')
  // `${SLUICE_NODE_FLAG}` (env -S expands it): the role's own flag, which the bench adds itself.
  .filter((f) => f !== '' && !f.startsWith('${'));
/**
 * The environment the image sets (the ENV lines of the Dockerfile's last stage: NODE_ENV, glibc
 * malloc's settings), for benches that measure a process as the image runs it.
 */
export const IMAGE_ENV: Record<string, string> = Object.fromEntries(
  (
    readFileSync(join(ROOT, 'Dockerfile'), 'utf8')
      .split(/^FROM /m)
      .at(-1) ?? ''
  )
    .split('\n')
    .filter((line) => line.startsWith('ENV '))
    .flatMap((line) => line.slice(4).trim().split(/\s+/))
    .map((pair) => pair.split('=') as [string, string]),
);
/** Clock ticks per second of /proc's CPU times. */
export const HZ = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout?.trim()) || 100;

/** The load generator, the upstream and the bench script share this core… */
export const LOAD_CORE = 0;
/** …and the process measured runs alone on this one. */
export const TARGET_CORE = 1;

export function onPath(cmd: string): boolean {
  return spawnSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' }).status === 0;
}

/**
 * Whether processes are pinned to cores: taskset exists and there are two cores. BENCH_PIN=0
 * turns it off: everything stays on the cores the bench was started on (`taskset -c 0 …` on a
 * machine whose other core is taken; only ratios within the run then mean anything).
 */
export const PIN = onPath('taskset') && cpus().length >= 2 && process.env.BENCH_PIN !== '0';

/** argv run on `core` when pinning. */
export const pinned = (core: number, argv: string[]) =>
  PIN ? ['taskset', '-c', String(core), ...argv] : argv;

/** Moves this process (all its threads) to the load core, when pinning. */
export function pinSelf(): void {
  if (PIN)
    spawnSync('taskset', ['-a', '-p', '-c', String(LOAD_CORE), String(process.pid)], { stdio: 'ignore' });
}
