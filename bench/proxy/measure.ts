/** One measured run of a target and scenario (warm-up, load, the target's CPU time per request), and the floor's rates. */
import { join } from 'node:path';
import { coreTicks, processTable, selfTicks, treeTicks } from '../lib/cpu.ts';
import { HZ, LOAD_CORE, pinned, TARGET_CORE } from '../lib/machine.ts';
import { type Proc, start, stop } from '../lib/processes.ts';
import { fmt } from '../lib/table.ts';
import { type Scenario, type Target, builtinTargets, upstreamConnections, waitReady } from './targets.ts';
import type { Options } from './options.ts';
import { type Pace, runLoad } from './load.ts';

export interface Row {
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

export async function measure(
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
  // which the warm-up and the calibration run measure (the achieved rate gives the period
  // actually seen per connection).
  let pace: Pace | null = rate === null ? null : { rate, delayMs: (opts.connections * 1000) / rate };
  const calibrate = (p: Pace, achieved: number): Pace => {
    if (!(achieved > 0)) return p;
    const taken = (opts.connections * 1000) / achieved - p.delayMs;
    return { rate: p.rate, delayMs: Math.max(0, (opts.connections * 1000) / p.rate - taken) };
  };
  if (opts.warmup > 0) {
    process.stderr.write(`bench: ${tag}: warm-up ${opts.warmup} s\n`);
    const w = await runLoad(opts, work, target.port, scenario, opts.warmup, pace);
    if (pace !== null) pace = calibrate(pace, w.rps);
  }
  // A second, short calibration once warm: the warm-up's first seconds run slower (the JIT), so a
  // pace set from them alone overshot the asked rate (a chain asked 15.5k req/s ran at 18.9k).
  if (pace !== null) {
    const c = await runLoad(opts, work, target.port, scenario, 2, pace);
    pace = calibrate(pace, c.rps);
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

export async function floorRates(
  opts: Options,
  work: string,
  upstream: Proc,
): Promise<Record<string, number>> {
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
