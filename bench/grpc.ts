/**
 * What REST → gRPC translation costs the gateway: CPU time of the data plane per
 * GET /v1/items/<id> (the request mapped to shop.v1.Catalog/GetItem, its answer decoded to proto3
 * JSON) next to a plain proxied GET /users/<id> (a JSON answer of similar size streamed through),
 * measured in one run (bench/lib/demo-gateway.ts: the demo's configuration on the target core,
 * alternating rounds, medians). The sample upstreams and the sample gRPC service run in this
 * process on the load core.
 *
 * Usage: node bench/grpc.ts [--requests N] [--concurrency C] [--rounds R]
 * Needs the demo's ports free (3001-3005) and 18290/18291.
 */
import { startGrpcUpstream } from '../examples/grpc-upstream.ts';
import { startSampleUpstreams } from '../examples/upstreams.ts';
import { demoBenchOptions, startDemoGateway } from './lib/demo-gateway.ts';

const { n, c, rounds } = demoBenchOptions();
const upstreams = await startSampleUpstreams(3001);
const grpcUpstream = await startGrpcUpstream(3005);
const gw = await startDemoGateway(18290, 'grpc', c);

try {
  const cpu = await gw.compare(
    {
      grpc: (i: number) => gw.get(`/v1/items/${i}`),
      proxied: (i: number) => gw.get(`/users/${i}`),
    },
    { n, rounds },
  );
  console.log(
    `\nCPU of the data plane, µs per request (median of ${rounds} rounds of ${n}, concurrency ${c}):`,
  );
  console.log(`  REST → gRPC (GetItem, proto3 JSON)     ${cpu.grpc.toFixed(0)}`);
  console.log(`  plain proxied GET                      ${cpu.proxied.toFixed(0)}`);
  console.log(`  ratio translated / proxied             ${(cpu.grpc / cpu.proxied).toFixed(2)}`);
} finally {
  await gw.close();
  await upstreams.close();
  await grpcUpstream.close();
}
