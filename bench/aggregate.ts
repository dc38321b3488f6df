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
import { startSampleUpstreams } from '../examples/upstreams.ts';
import { demoBenchOptions, startDemoGateway } from './lib/demo-gateway.ts';

const { n, c, rounds } = demoBenchOptions();
const upstreams = await startSampleUpstreams(3001);
const gw = await startDemoGateway(18280, 'aggregate', c);

try {
  const cpu = await gw.compare(
    {
      aggregated: (i: number) => gw.get(`/api/user-profile/${i}`),
      proxied3: async (i: number) => {
        await gw.get(`/users/${i}`);
        await gw.get(`/orders/${i}`);
        await gw.get(`/preferences/${i}`);
      },
    },
    { n, rounds },
  );
  console.log(`\nCPU of the data plane, µs (median of ${rounds} rounds of ${n}, concurrency ${c}):`);
  console.log(`  aggregated request (3 calls merged)    ${cpu.aggregated.toFixed(0)}`);
  console.log(`  three sequential proxied requests      ${cpu.proxied3.toFixed(0)}`);
  console.log(`  ratio aggregated / three proxied       ${(cpu.aggregated / cpu.proxied3).toFixed(2)}`);
} finally {
  await gw.close();
  await upstreams.close();
}
