/**
 * Reads one result of the shared peers harness (../shared/bench/peers.sh --out DIR) and prints
 * every target next to the Node floor (bare-node-undici) measured in the same run: CPU µs per
 * request, p99 latency and peak RSS, each as a ratio, with the targets of issue 29 (plain proxy
 * GET ≤ 1.0×, POST ≤ 1.05×; the plugin chain ≤ 1.15×; p99 ≤ 1.3×) and RSS ≤ 1.3× (the first round's).
 * With several rounds, the CPU ratio of each round too (a target to the floor of its own round: the
 * harness interleaves them, so a round's pair saw the same machine).
 * With --cache and --replay (bench/plugins.sh) it also prints the plugin ratios of issue 29, to the
 * first --plain target of the same run: a proxy-cache hit's CPU µs/req over the plain GET's (≤ 0.6×),
 * an idempotent replay's over the plain POST's (≤ 0.8×). It asserts nothing: figures are read, not tested.
 *
 * Usage: node bench/ratios.ts RESULT.json [--plain NAME[,NAME]] [--chain NAME[,NAME]] [--cache NAME] [--replay NAME]
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

interface Summary {
  ok_runs: number;
  cpu_us_per_req: number;
  cpu_us_per_req_range: [number, number];
  rps: number;
  p99_ms: number;
  peak_rss_mib: number;
  foreign_cpu_pct: number;
}

/** One target, scenario and round as the harness recorded it (the fields read here). */
interface Measurement {
  round: number;
  target: string;
  scenario: string;
  error: string | null;
  wrk: { requests: number } | null;
  clk_tck: number;
  target_ticks: number;
}

const FLOOR = 'bare-node-undici';
const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    plain: { type: 'string', default: 'sluice' },
    chain: { type: 'string', default: 'sluice-chain' },
    cache: { type: 'string', default: '' },
    replay: { type: 'string', default: '' },
  },
});
if (positionals.length !== 1) {
  process.stderr.write('usage: node bench/ratios.ts RESULT.json [--plain NAME,…] [--chain NAME,…]\n');
  process.exit(2);
}
const result = JSON.parse(readFileSync(positionals[0], 'utf8')) as {
  meta: { params?: unknown; host?: unknown };
  summary: Record<string, Record<string, Summary>>;
  measurements: Measurement[];
};
const plain = new Set(values.plain.split(','));
const chain = new Set(values.chain.split(','));
const CPU_TARGET: Record<string, number> = { get: 1.0, post: 1.05 };
const CHAIN_TARGET = 1.15;
const P99_TARGET = 1.3;
const RSS_TARGET = 1.3;

/** CPU µs per request of each round of a target and scenario, in round order. */
const perRound = (target: string, scenario: string): Map<number, number> =>
  new Map(
    result.measurements
      .filter((m) => m.target === target && m.scenario === scenario && m.error === null && m.wrk?.requests)
      .map((m) => [m.round, ((m.target_ticks / m.clk_tck) * 1e6) / m.wrk!.requests]),
  );

const x = (v: number, floor: number) => `${(v / floor).toFixed(2)}×`;
const mark = (ratio: number, limit: number | undefined) =>
  limit === undefined ? '' : ratio <= limit ? ` (≤ ${limit.toFixed(2)} ✓)` : ` (> ${limit.toFixed(2)})`;

for (const [scenario, targets] of Object.entries(result.summary)) {
  const floor = targets[FLOOR];
  if (!floor?.ok_runs) {
    process.stdout.write(`${scenario}: no ${FLOOR} figures in this run: no ratios\n`);
    continue;
  }
  const rows = [
    '| target | CPU µs/req (range) | ×floor | ×floor by round | p99 ms | ×floor | peak RSS MiB | ×floor | req/s | foreign CPU % |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  const floorRounds = perRound(FLOOR, scenario);
  for (const [name, s] of Object.entries(targets)) {
    if (!s.ok_runs) continue;
    const cpuLimit = plain.has(name) ? CPU_TARGET[scenario] : chain.has(name) ? CHAIN_TARGET : undefined;
    const ours = cpuLimit !== undefined;
    const cpu = s.cpu_us_per_req / floor.cpu_us_per_req;
    const p99 = s.p99_ms / floor.p99_ms;
    const rss = s.peak_rss_mib / floor.peak_rss_mib;
    const rounds = [...perRound(name, scenario)]
      .filter(([r]) => floorRounds.has(r))
      .map(([r, us]) => (us / floorRounds.get(r)!).toFixed(2))
      .join(' / ');
    rows.push(
      `| ${name} | ${s.cpu_us_per_req.toFixed(1)} (${s.cpu_us_per_req_range.map((v) => v.toFixed(1)).join('–')}) | ` +
        `${x(s.cpu_us_per_req, floor.cpu_us_per_req)}${mark(cpu, cpuLimit)} | ${rounds} | ${s.p99_ms.toFixed(2)} | ` +
        `${x(s.p99_ms, floor.p99_ms)}${ours ? mark(p99, P99_TARGET) : ''} | ${s.peak_rss_mib.toFixed(0)} | ` +
        `${x(s.peak_rss_mib, floor.peak_rss_mib)}${ours ? mark(rss, RSS_TARGET) : ''} | ${Math.round(s.rps)} | ${s.foreign_cpu_pct} |`,
    );
  }
  process.stdout.write(
    `\n### ${scenario.toUpperCase()}: ratios to the Node floor (${FLOOR}) of the same run\n${rows.join('\n')}\n`,
  );
}

/** A plugin target next to the plain proxy, in the scenario where the plugin does its work. */
const PLUGIN_RATIOS = [
  { what: 'proxy-cache hit', target: values.cache, scenario: 'get', limit: 0.6 },
  { what: 'idempotent replay', target: values.replay, scenario: 'post', limit: 0.8 },
].filter((p) => p.target !== '');
const base = values.plain.split(',')[0];
if (PLUGIN_RATIOS.length) {
  const rows = [
    '| what | target | scenario | CPU µs/req | plain µs/req | ×plain |',
    '|---|---|---|---:|---:|---:|',
  ];
  for (const p of PLUGIN_RATIOS) {
    const s = result.summary[p.scenario]?.[p.target];
    const b = result.summary[p.scenario]?.[base];
    if (!s?.ok_runs || !b?.ok_runs) {
      rows.push(
        `| ${p.what} | ${p.target} | ${p.scenario} | - | - | no figures for ${p.target} or ${base} |`,
      );
      continue;
    }
    const ratio = s.cpu_us_per_req / b.cpu_us_per_req;
    rows.push(
      `| ${p.what} | ${p.target} | ${p.scenario} | ${s.cpu_us_per_req.toFixed(1)} | ${b.cpu_us_per_req.toFixed(1)} | ` +
        `${ratio.toFixed(2)}×${mark(ratio, p.limit)} |`,
    );
  }
  process.stdout.write(
    `\n### Plugins: CPU µs/req as ratios to the plain proxy (${base}) of the same run\n${rows.join('\n')}\n`,
  );
}
