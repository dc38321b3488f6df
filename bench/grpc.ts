/**
 * What REST → gRPC translation costs the gateway: CPU time of the data plane per
 * GET /v1/items/<id> (the request mapped to shop.v1.Catalog/GetItem, its answer decoded to proto3
 * JSON) next to a plain proxied GET /users/<id> (a JSON answer of similar size streamed through),
 * measured in one run. The data plane is `sluice run` on examples/gateway.yaml (the demo's
 * configuration), alone on the target core; the sample upstreams, the sample gRPC service and the
 * client (undici, a fixed concurrency) run in this process on the load core. Rounds alternate the
 * two workloads; the figure is the median CPU µs per request, and the ratio between them.
 * Timings are printed, never asserted.
 *
 * Usage: node bench/grpc.ts [--requests N] [--concurrency C] [--rounds R]
 * Needs the demo's ports free (3001-3005) and 18290/18291.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Pool } from 'undici';
import { startGrpcUpstream } from '../examples/grpc-upstream.ts';
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
const PORT = 18290;

pinSelf();
stopEverythingOnExit();
const upstreams = await startSampleUpstreams(3001);
const grpcUpstream = await startGrpcUpstream(3005);
const dir = mkdtempSync(join(tmpdir(), 'sluice-bench-grpc-'));
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
  'grpc translated': (i: number) => get(`/v1/items/${i}`),
  proxied: (i: number) => get(`/users/${i}`),
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
  const samples: Record<string, number[]> = { 'grpc translated': [], proxied: [] };
  for (let r = 0; r < ROUNDS; r++)
    for (const [name, work] of Object.entries(WORK)) samples[name].push(await measure(work, N));
  const grpc = median(samples['grpc translated']);
  const proxied = median(samples.proxied);
  console.log(
    `\nCPU of the data plane, µs per request (median of ${ROUNDS} rounds of ${N}, concurrency ${C}):`,
  );
  console.log(`  REST → gRPC (GetItem, proto3 JSON)     ${grpc.toFixed(0)}`);
  console.log(`  plain proxied GET                      ${proxied.toFixed(0)}`);
  console.log(`  ratio translated / proxied             ${(grpc / proxied).toFixed(2)}`);
} finally {
  await pool.close();
  await stopAll();
  await upstreams.close();
  await grpcUpstream.close();
}
