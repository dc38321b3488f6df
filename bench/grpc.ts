/**
 * What REST → gRPC translation costs the gateway: CPU time of the data plane per
 * GET /v1/items/<id> (the request mapped to shop.v1.Catalog/GetItem, its answer decoded to proto3
 * JSON) next to a plain proxied GET /users/<id> (a JSON answer of similar size streamed through),
 * measured in one run (bench/lib/alternating.ts: the demo's configuration on the target core,
 * alternating rounds, medians). The sample upstreams and the sample gRPC service run in this
 * process on the load core.
 *
 * Usage: node bench/grpc.ts [--requests N] [--concurrency C] [--rounds R]
 * Needs the demo's ports free (3001-3006) and 18296/18297.
 */
import { startGrpcUpstream } from '../examples/grpc-upstream.ts';
import { startSampleUpstreams } from '../examples/upstreams.ts';
import { alternate, alternatingArgs, startBenchGateway } from './lib/alternating.ts';

const OPTS = alternatingArgs();
const { n: N, concurrency: C, rounds: ROUNDS } = OPTS;

const upstreams = await startSampleUpstreams(3001);
const grpcUpstream = await startGrpcUpstream(3006);
const gw = await startBenchGateway('examples/gateway.yaml', 18296, 'grpc', C);
const get = gw.get;

const WORK = {
  grpc: (i: number) => get(`/v1/items/${i}`),
  proxied: (i: number) => get(`/users/${i}`),
} as const;

try {
  const cpu = await alternate(gw.gateway, WORK, OPTS);
  console.log(
    `\nCPU of the data plane, µs per request (median of ${ROUNDS} rounds of ${N}, concurrency ${C}):`,
  );
  console.log(`  REST → gRPC (GetItem, proto3 JSON)     ${cpu.grpc.toFixed(0)}`);
  console.log(`  plain proxied GET                      ${cpu.proxied.toFixed(0)}`);
  console.log(`  ratio translated / proxied             ${(cpu.grpc / cpu.proxied).toFixed(2)}`);
} finally {
  await gw.close();
  await upstreams.close();
  await grpcUpstream.close();
}
