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
 *          [--loadgen wrk|autocannon] [--no-compile] [--rate-of-floor F] [--header 'Name: value']…
 * With --rate-of-floor F (e.g. 0.5) every target is measured at a constant rate instead of at full
 * load: F × the floor's full-load req/s, measured first in the same run; the table then shows the
 * p99 each target adds to the floor's at that rate (the tail a user sees below saturation).
 * Env: BENCH_DURATION, BENCH_WARMUP, BENCH_CONNECTIONS, BENCH_ROUNDS, BENCH_SCENARIOS, BENCH_TARGETS,
 *      BENCH_LOADGEN, BENCH_COMPILE=0.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { PORTS } from './fixtures.ts';
import { portFree } from './lib/http.ts';
import { BENCH, LOAD_CORE, NODE, PIN, pinned, pinSelf, ROOT, TARGET_CORE } from './lib/machine.ts';
import { start, stop, stopAll, stopEverythingOnExit, tail } from './lib/processes.ts';
import { builtinTargets, check, waitReady } from './proxy/targets.ts';
import { options } from './proxy/options.ts';
import { ensureAutocannon } from './proxy/load.ts';
import { type Row, floorRates, measure } from './proxy/measure.ts';
import { report } from './proxy/report.ts';

// ---------------------------------------------------------------- processes

stopEverythingOnExit();

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
        await waitReady(proc, target.port, opts.headers);
        const notes = await check(target.port, opts.headers);
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
