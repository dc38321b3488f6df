/**
 * The data plane as the per-feature CPU benchmarks measure it (bench/aggregate.ts, bench/grpc.ts):
 * `sluice run` on examples/gateway.yaml (the demo's configuration), alone on the target core,
 * driven by an undici Pool at a fixed concurrency from this process (the load core). Workloads
 * run in alternating rounds after a warm-up; each figure is the median CPU µs of the data plane
 * per unit of work. Timings are printed by the caller, never asserted.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Pool } from 'undici';
import { treeTicks } from './cpu.ts';
import { waitReady } from './http.ts';
import { HZ, NODE, pinned, pinSelf, SLUICE_NODE_FLAGS, TARGET_CORE } from './machine.ts';
import { start, stopAll, stopEverythingOnExit } from './processes.ts';
import { median } from './stats.ts';

/** --requests N (per round), --concurrency C, --rounds R. */
export function demoBenchOptions() {
  const { values } = parseArgs({
    options: {
      requests: { type: 'string', default: process.env.BENCH_REQUESTS ?? '4000' },
      concurrency: { type: 'string', default: '16' },
      rounds: { type: 'string', default: process.env.BENCH_ROUNDS ?? '3' },
    },
  });
  return { n: Number(values.requests), c: Number(values.concurrency), rounds: Number(values.rounds) };
}

export interface DemoGateway {
  /** GET path; anything but 200 throws. */
  get(path: string): Promise<void>;
  /** The median CPU µs per unit of each workload, over `rounds` alternating rounds of `n` units. */
  compare<K extends string>(
    work: Record<K, (i: number) => Promise<void>>,
    opts: { n: number; rounds: number },
  ): Promise<Record<K, number>>;
  close(): Promise<void>;
}

/** Starts the data plane on `port` (admin on port + 1); the caller's process is pinned to the load core. */
export async function startDemoGateway(
  port: number,
  name: string,
  concurrency: number,
): Promise<DemoGateway> {
  pinSelf();
  stopEverythingOnExit();
  const dir = mkdtempSync(join(tmpdir(), `sluice-bench-${name}-`));
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
      String(port),
      '--admin-port',
      String(port + 1),
      '--admin-token',
      'bench',
      '--no-access-log',
      '--log-level',
      'warn',
    ]),
    join(dir, 'sluice.log'),
  );
  await waitReady(gateway, `http://127.0.0.1:${port + 1}/readyz`);
  const pool = new Pool(`http://127.0.0.1:${port}`, { connections: concurrency });

  const get = async (path: string) => {
    const r = await pool.request({ path, method: 'GET' });
    await r.body.dump();
    if (r.statusCode !== 200) throw new Error(`GET ${path}: ${r.statusCode}`);
  };

  /** CPU µs of the data plane per unit of `work`, n units at the pool's concurrency. */
  const measure = async (work: (i: number) => Promise<void>, n: number) => {
    const before = treeTicks(gateway.child.pid);
    let next = 0;
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (next < n) await work(next++);
      }),
    );
    return (((treeTicks(gateway.child.pid) - before) / HZ) * 1e6) / n;
  };

  return {
    get,
    async compare(work, { n, rounds }) {
      const entries = Object.entries(work) as [keyof typeof work, (i: number) => Promise<void>][];
      for (const [, w] of entries) await measure(w, Math.min(n, 1000)); // warm-up
      const samples = new Map(entries.map(([k]) => [k, [] as number[]]));
      for (let r = 0; r < rounds; r++)
        for (const [k, w] of entries) samples.get(k)!.push(await measure(w, n));
      return Object.fromEntries([...samples].map(([k, s]) => [k, median(s)])) as Record<
        keyof typeof work,
        number
      >;
    },
    async close() {
      await pool.close();
      await stopAll();
    },
  };
}
