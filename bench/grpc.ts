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
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Pool } from 'undici';
import { startGrpcUpstream } from '../examples/grpc-upstream.ts';
import { startSampleUpstreams } from '../examples/upstreams.ts';
import { alternate, alternatingArgs, startSluiceRun } from './lib/alternating.ts';
import { pinSelf } from './lib/machine.ts';
import { stopAll, stopEverythingOnExit } from './lib/processes.ts';

const OPTS = alternatingArgs();
const { n: N, concurrency: C, rounds: ROUNDS } = OPTS;
const PORT = 18296;

pinSelf();
stopEverythingOnExit();
const upstreams = await startSampleUpstreams(3001);
const grpcUpstream = await startGrpcUpstream(3006);
const dir = mkdtempSync(join(tmpdir(), 'sluice-bench-grpc-'));
const gateway = await startSluiceRun('examples/gateway.yaml', PORT, dir);
const pool = new Pool(`http://127.0.0.1:${PORT}`, { connections: C });

async function get(path: string): Promise<void> {
  const r = await pool.request({ path, method: 'GET' });
  await r.body.dump();
  if (r.statusCode !== 200) throw new Error(`GET ${path}: ${r.statusCode}`);
}

const WORK = {
  grpc: (i: number) => get(`/v1/items/${i}`),
  proxied: (i: number) => get(`/users/${i}`),
} as const;

try {
  const cpu = await alternate(gateway, WORK, OPTS);
  console.log(
    `\nCPU of the data plane, µs per request (median of ${ROUNDS} rounds of ${N}, concurrency ${C}):`,
  );
  console.log(`  REST → gRPC (GetItem, proto3 JSON)     ${cpu.grpc.toFixed(0)}`);
  console.log(`  plain proxied GET                      ${cpu.proxied.toFixed(0)}`);
  console.log(`  ratio translated / proxied             ${(cpu.grpc / cpu.proxied).toFixed(2)}`);
} finally {
  await pool.close();
  await stopAll();
  await upstreams.close();
  await grpcUpstream.close();
}
