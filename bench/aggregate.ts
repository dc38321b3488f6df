/**
 * What an aggregated request costs the gateway: CPU time of the data plane per
 * GET /api/user-profile/<id> (three backend calls merged into one JSON answer) next to three
 * sequential proxied requests (GET /users/<id>, /orders/<id>, /preferences/<id>: what a client
 * sends without aggregation), measured in one run. The data plane is `sluice run` on
 * examples/gateway.yaml (the demo's configuration), alone on the target core; the sample
 * upstreams and the client (undici, a fixed concurrency) run in this process on the load core.
 * Rounds alternate the two workloads; the figure is the median CPU µs per unit of work, and the
 * ratio between them. Timings are printed, never asserted.
 *
 * Usage: node bench/aggregate.ts [--requests N] [--concurrency C] [--rounds R]
 * Needs the demo's ports free (3001-3004) and 18280/18281.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Pool } from 'undici';
import { startSampleUpstreams } from '../examples/upstreams.ts';
import { treeTicks } from './lib/cpu.ts';
import { waitReady } from './lib/http.ts';
import { HZ, NODE, pinned, pinSelf, SLUICE_NODE_FLAGS, TARGET_CORE } from './lib/machine.ts';
import { start, stopAll, stopEverythingOnExit } from './lib/processes.ts';
import { median } from './lib/stats.ts';

const { values } = parseArgs({
  options: {
    requests: { type: 'string', default: process.env.BENCH_REQUESTS ?? '4000' },
    concurrency: { type: 'string', default: '16' },
    rounds: { type: 'string', default: process.env.BENCH_ROUNDS ?? '3' },
  },
});
const N = Number(values.requests);
const C = Number(values.concurrency);
const ROUNDS = Number(values.rounds);
const PORT = 18280;

pinSelf();
stopEverythingOnExit();
const upstreams = await startSampleUpstreams(3001);
const dir = mkdtempSync(join(tmpdir(), 'sluice-bench-aggregate-'));
const gateway = start(
  'sluice',
  pinned(TARGET_CORE, [
    NODE,
    ...SLUICE_NODE_FLAGS,
    'bin/sluice.ts',
    'run',
    '-f',
    'examples/gateway.yaml',
    '--host',
    '127.0.0.1',
    '--port',
    String(PORT),
    '--admin-port',
    String(PORT + 1),
    '--admin-token',
    'bench',
    '--no-access-log',
    '--log-level',
    'warn',
  ]),
  join(dir, 'sluice.log'),
);
await waitReady(gateway, `http://127.0.0.1:${PORT + 1}/readyz`);
const pool = new Pool(`http://127.0.0.1:${PORT}`, { connections: C });

async function get(path: string): Promise<void> {
  const r = await pool.request({ path, method: 'GET' });
  await r.body.dump();
  if (r.statusCode !== 200) throw new Error(`GET ${path}: ${r.statusCode}`);
}

const WORK = {
  aggregated: (i: number) => get(`/api/user-profile/${i}`),
  'proxied ×3': async (i: number) => {
    await get(`/users/${i}`);
    await get(`/orders/${i}`);
    await get(`/preferences/${i}`);
  },
} as const;

/** CPU µs of the data plane per unit of `work`, n units at concurrency C. */
async function measure(work: (i: number) => Promise<void>, n: number): Promise<number> {
  const before = treeTicks(gateway.child.pid);
  let next = 0;
  await Promise.all(
    Array.from({ length: C }, async () => {
      while (next < n) await work(next++);
    }),
  );
  return (((treeTicks(gateway.child.pid) - before) / HZ) * 1e6) / n;
}

try {
  for (const work of Object.values(WORK)) await measure(work, Math.min(N, 1000)); // warm-up
  const samples: Record<string, number[]> = { aggregated: [], 'proxied ×3': [] };
  for (let r = 0; r < ROUNDS; r++)
    for (const [name, work] of Object.entries(WORK)) samples[name].push(await measure(work, N));
  const agg = median(samples.aggregated);
  const three = median(samples['proxied ×3']);
  console.log(`\nCPU of the data plane, µs (median of ${ROUNDS} rounds of ${N}, concurrency ${C}):`);
  console.log(`  aggregated request (3 calls merged)    ${agg.toFixed(0)}`);
  console.log(`  three sequential proxied requests      ${three.toFixed(0)}`);
  console.log(`  ratio aggregated / three proxied       ${(agg / three).toFixed(2)}`);
} finally {
  await pool.close();
  await stopAll();
  await upstreams.close();
}
