/** bench/run.ts's flags and environment (make bench). */
import { parseArgs } from 'node:util';
import { onPath } from '../lib/machine.ts';
import { SCENARIOS, type Scenario, type Target, UPSTREAM_URL } from './targets.ts';

export const HELP = `node bench/run.ts [options]   (make bench)

  --duration S        measured seconds per target and scenario (BENCH_DURATION, default 10)
  --warmup S          warm-up seconds before each measured run, not counted (BENCH_WARMUP, default 3)
  --connections N     client connections (BENCH_CONNECTIONS, default 50)
  --rounds N          run every target N times, interleaved; tables show medians and the CPU range
                      (BENCH_ROUNDS, default 1)
  --scenarios LIST    get,post (BENCH_SCENARIOS)
  --targets LIST      direct,floor,sluice,sluice+transformer,sluice+cache (BENCH_TARGETS)
  --target N:PORT:CMD an extra target: CMD runs through bash -c with BENCH_PORT and BENCH_UPSTREAM_URL
                      set, must listen on 127.0.0.1:PORT in the foreground (repeatable)
  --loadgen TOOL      wrk or autocannon (BENCH_LOADGEN; default wrk when on PATH)
  --no-compile        skip bench/compile.ts (BENCH_COMPILE=0)
  --header 'N: V'     a request header sent to every target, by the check and the load (repeatable;
                      e.g. the chain's Authorization: bench/chain.sh --half-load)
  --rate-of-floor F   constant rate: F (0 < F <= 1) × the floor's full-load req/s, measured first
                      (BENCH_RATE_OF_FLOOR); wrk paces each connection (Lua delay), autocannon -R
`;

export function options() {
  const { values } = parseArgs({
    options: {
      duration: { type: 'string' },
      warmup: { type: 'string' },
      connections: { type: 'string' },
      rounds: { type: 'string' },
      scenarios: { type: 'string' },
      targets: { type: 'string' },
      target: { type: 'string', multiple: true },
      loadgen: { type: 'string' },
      'no-compile': { type: 'boolean' },
      'rate-of-floor': { type: 'string' },
      header: { type: 'string', multiple: true },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    process.stdout.write(HELP);
    process.exit(0);
  }
  const num = (flag: string | undefined, env: string, fallback: number, min: number) => {
    const raw = flag ?? process.env[env];
    if (raw === undefined || raw === '') return fallback;
    const n = Number(raw);
    if (!Number.isInteger(n) || n < min)
      throw new Error(`${env} / --${env.slice(6).toLowerCase()}: a whole number >= ${min}, not ${raw}`);
    return n;
  };
  const list = (raw: string | undefined) =>
    raw
      ?.split(',')
      .map((s) => s.trim())
      .filter(Boolean);
  const scenarios = list(values.scenarios ?? process.env.BENCH_SCENARIOS) ?? ['get', 'post'];
  for (const s of scenarios) if (!(s in SCENARIOS)) throw new Error(`unknown scenario ${s} (get, post)`);
  const extra: Target[] = (values.target ?? []).map((spec) => {
    const m = /^([^:]+):(\d+):(.+)$/s.exec(spec);
    if (!m) throw new Error(`--target: NAME:PORT:CMD, not ${JSON.stringify(spec)}`);
    const port = Number(m[2]);
    return {
      name: m[1],
      port,
      cmd: ['bash', '-c', m[3]],
      env: { BENCH_PORT: String(port), BENCH_UPSTREAM_URL: UPSTREAM_URL },
    };
  });
  const headers: [string, string][] = (values.header ?? []).map((h) => {
    const m = /^([!#$%&'*+.^_`|~0-9A-Za-z-]+):\s*(.*)$/.exec(h);
    if (!m) throw new Error(`--header: 'Name: value', not ${JSON.stringify(h)}`);
    return [m[1], m[2]];
  });
  const loadgen = values.loadgen ?? process.env.BENCH_LOADGEN ?? (onPath('wrk') ? 'wrk' : 'autocannon');
  if (loadgen !== 'wrk' && loadgen !== 'autocannon')
    throw new Error(`--loadgen: wrk or autocannon, not ${loadgen}`);
  const rateRaw = values['rate-of-floor'] ?? process.env.BENCH_RATE_OF_FLOOR;
  const rateOfFloor = rateRaw ? Number(rateRaw) : null;
  if (rateOfFloor !== null && !(rateOfFloor > 0 && rateOfFloor <= 1))
    throw new Error(`--rate-of-floor: a number in (0, 1], not ${rateRaw}`);
  return {
    rateOfFloor,
    duration: num(values.duration, 'BENCH_DURATION', 10, 1),
    warmup: num(values.warmup, 'BENCH_WARMUP', 3, 0),
    connections: num(values.connections, 'BENCH_CONNECTIONS', 50, 1),
    rounds: num(values.rounds, 'BENCH_ROUNDS', 1, 1),
    scenarios: scenarios as Scenario[],
    targets: list(values.targets ?? process.env.BENCH_TARGETS) ?? null,
    extra,
    headers,
    loadgen: loadgen as 'wrk' | 'autocannon',
    compile: !values['no-compile'] && process.env.BENCH_COMPILE !== '0',
  };
}
export type Options = ReturnType<typeof options>;
