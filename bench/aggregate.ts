/**
 * What an aggregated request costs the gateway: CPU time of the data plane per
 * GET /api/user-profile/<id> (three backend calls merged into one JSON answer) next to three
 * sequential proxied requests (GET /users/<id>, /orders/<id>, /preferences/<id>: what a client
 * sends without aggregation), measured in one run (bench/lib/demo-gateway.ts: the demo's
 * configuration on the target core, alternating rounds, medians). The sample upstreams run in
 * this process on the load core.
 *
 * Usage: node bench/aggregate.ts [--requests N] [--concurrency C] [--rounds R]
 * Needs the demo's ports free (3001-3004) and 18280/18281.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Pool } from 'undici';
import { startSampleUpstreams } from '../examples/upstreams.ts';
import { alternate, alternatingArgs, startSluiceRun } from './lib/alternating.ts';
import { pinSelf } from './lib/machine.ts';
import { stopAll, stopEverythingOnExit } from './lib/processes.ts';

const OPTS = alternatingArgs();
const { n: N, concurrency: C, rounds: ROUNDS } = OPTS;
const PORT = 18280;

pinSelf();
stopEverythingOnExit();
const upstreams = await startSampleUpstreams(3001);
const dir = mkdtempSync(join(tmpdir(), 'sluice-bench-aggregate-'));
const gateway = await startSluiceRun('examples/gateway.yaml', PORT, dir);
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

try {
  const { aggregated: agg, 'proxied ×3': three } = await alternate(gateway, WORK, OPTS);
  console.log(`\nCPU of the data plane, µs (median of ${ROUNDS} rounds of ${N}, concurrency ${C}):`);
  console.log(`  aggregated request (3 calls merged)    ${agg.toFixed(0)}`);
  console.log(`  three sequential proxied requests      ${three.toFixed(0)}`);
  console.log(`  ratio aggregated / three proxied       ${(agg / three).toFixed(2)}`);
} finally {
  await pool.close();
  await stopAll();
  await upstreams.close();
}
