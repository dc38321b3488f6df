/**
 * What an aggregated request costs the gateway: CPU time of the data plane per
 * GET /api/user-profile/<id> (three backend calls merged into one JSON answer) next to three
 * sequential proxied requests (GET /users/<id>, /orders/<id>, /preferences/<id>: what a client
 * sends without aggregation), measured in one run (bench/lib/alternating.ts: the demo's
 * configuration on the target core, alternating rounds, medians). The sample upstreams run in
 * this process on the load core.
 *
 * Usage: node bench/aggregate.ts [--requests N] [--concurrency C] [--rounds R]
 * Needs the demo's ports free (3001-3004) and 18280/18281.
 */
import { startSampleUpstreams } from '../examples/upstreams.ts';
import { alternate, alternatingArgs, startBenchGateway } from './lib/alternating.ts';

const OPTS = alternatingArgs();
const { n: N, concurrency: C, rounds: ROUNDS } = OPTS;

const upstreams = await startSampleUpstreams(3001);
const gw = await startBenchGateway('examples/gateway.yaml', 18280, 'aggregate', C);
const get = gw.get;

const WORK = {
  aggregated: (i: number) => get(`/api/user-profile/${i}`),
  'proxied ×3': async (i: number) => {
    await get(`/users/${i}`);
    await get(`/orders/${i}`);
    await get(`/preferences/${i}`);
  },
} as const;

try {
  const { aggregated: agg, 'proxied ×3': three } = await alternate(gw.gateway, WORK, OPTS);
  console.log(`\nCPU of the data plane, µs (median of ${ROUNDS} rounds of ${N}, concurrency ${C}):`);
  console.log(`  aggregated request (3 calls merged)    ${agg.toFixed(0)}`);
  console.log(`  three sequential proxied requests      ${three.toFixed(0)}`);
  console.log(`  ratio aggregated / three proxied       ${(agg / three).toFixed(2)}`);
} finally {
  await gw.close();
  await upstreams.close();
}
