/** The proxy bench's tables: medians over rounds, ratios to the floor, notes. */
import { median } from '../lib/stats.ts';
import { fmt, table } from '../lib/table.ts';
import { SCENARIOS, type Target } from './targets.ts';
import type { Options } from './options.ts';
import type { Row } from './measure.ts';

/** One target and scenario over its rounds: medians, sums of failures, the CPU range. */
export function aggregate(rows: Row[]) {
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
export type Aggregate = ReturnType<typeof aggregate>;

export function report(
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
