/**
 * What per-endpoint balancing costs over a single URL upstream (issue 25: ≤ 3 %). One data
 * plane (balance-target.ts) on the target core serves every variant on its own path; the load
 * generator (wrk -t1 -c50) and three copies of the bench's upstream share the load core. Each
 * round measures every variant for a few seconds, in a rotated order; CPU µs/req is the data
 * plane's utime+stime over the slot / requests. Reported: per variant the median CPU µs/req and
 * req/s, and the median over rounds of its ratio to `url` in the same round (alternating runs
 * seconds apart cancel most of a shared machine's drift, which moves single runs by ±25 %).
 *
 * Usage: node bench/balance.ts [--rounds 12] [--seconds 3] [--variants url,ep1,ep3,lr3,ch3]
 * (also wb2, wbs: weighted backends; gwl: the url route on a Gateway listener port; balance-target.ts)
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { EXTRA_UPSTREAM_PORTS, listenerPort } from './balance-target.ts';
import { GET_PATH, PORTS } from './fixtures.ts';
import { treeTicks } from './lib/cpu.ts';
import { waitReady } from './lib/http.ts';
import { HZ, LOAD_CORE, NODE, pinned, pinSelf, SLUICE_NODE_FLAGS, TARGET_CORE } from './lib/machine.ts';
import { start, stopAll, stopEverythingOnExit } from './lib/processes.ts';
import { parseWrk } from './lib/wrk.ts';

const { values } = parseArgs({
  options: {
    rounds: { type: 'string' },
    seconds: { type: 'string' },
    variants: { type: 'string' },
  },
});
const rounds = Number(values.rounds ?? 12);
const seconds = Number(values.seconds ?? 3);
const variants = (values.variants ?? 'url,ep1,ep3,lr3,ch3').split(',');
const PORT = 18220;
const work = mkdtempSync(join(tmpdir(), 'sluice-balance-'));

stopEverythingOnExit();
pinSelf();
for (const port of [PORTS.upstream, ...EXTRA_UPSTREAM_PORTS])
  start(
    `upstream-${port}`,
    pinned(LOAD_CORE, [NODE, 'bench/upstream.ts', String(port)]),
    join(work, `up-${port}.log`),
  );
const dp = start(
  'balance-target',
  pinned(TARGET_CORE, [NODE, ...SLUICE_NODE_FLAGS, 'bench/balance-target.ts']),
  join(work, 'target.log'),
  { BENCH_PORT: String(PORT) },
);
/** gwl is served on the Gateway listener port; every other variant on the proxy port. */
const urlOf = (v: string) => `http://127.0.0.1:${v === 'gwl' ? listenerPort(PORT) : PORT}/${v}${GET_PATH}`;
for (const v of variants) await waitReady(dp, urlOf(v));

// Every variant gets an x-user header (the hashing variant's key), one of 1,000 users at random.
const lua = join(work, 'users.lua');
writeFileSync(
  lua,
  'request = function()\n  return wrk.format(nil, nil, { ["x-user"] = "user-" .. math.random(1, 1000) })\nend\n',
);

/** One wrk run on a variant's path: requests, seconds, and the data plane's CPU ticks meanwhile. */
function run(variant: string, secs: number) {
  const before = treeTicks(dp.child.pid);
  const out = spawnSync('wrk', ['-t1', '-c50', `-d${secs}s`, '--latency', '-s', lua, urlOf(variant)], {
    encoding: 'utf8',
  }).stdout;
  const ticks = treeTicks(dp.child.pid) - before;
  const w = parseWrk(out);
  if (w.non2xx || w.errors) throw new Error(`${variant}: ${w.non2xx} non-2xx, ${w.errors} errors`);
  return { cpuUs: ((ticks / HZ) * 1e6) / w.requests, rps: w.requests / w.seconds };
}

process.stderr.write(
  `balance: warm-up, then ${rounds} rounds of ${variants.join(', ')} (${seconds} s each)\n`,
);
for (const v of variants) run(v, 3);
const rows = new Map(variants.map((v) => [v, [] as { cpuUs: number; rps: number }[]]));
for (let r = 0; r < rounds; r++) {
  const order = variants.map((_, i) => variants[(i + r) % variants.length]);
  for (const v of order) rows.get(v)!.push(run(v, seconds));
  process.stderr.write(`balance: round ${r + 1}/${rounds}\n`);
}
await stopAll();

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const base = rows.get('url');
const pct = (x: number) => `${x >= 1 ? '+' : ''}${((x - 1) * 100).toFixed(1)} %`;
console.log(`variant  CPU µs/req (median, range)  req/s  CPU vs url (median of rounds)  req/s vs url`);
for (const [v, xs] of rows) {
  const cpu = xs.map((x) => x.cpuUs);
  const line = [
    v.padEnd(7),
    `${median(cpu).toFixed(1)} (${Math.min(...cpu).toFixed(1)}–${Math.max(...cpu).toFixed(1)})`.padEnd(26),
    String(Math.round(median(xs.map((x) => x.rps)))).padEnd(6),
  ];
  if (base && v !== 'url') {
    line.push(pct(median(xs.map((x, i) => x.cpuUs / base[i].cpuUs))).padEnd(29));
    line.push(pct(median(xs.map((x, i) => x.rps / base[i].rps))));
  }
  console.log(line.join('  '));
}
