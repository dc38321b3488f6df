/**
 * The shape of the benches that weigh one kind of request against another in the same run
 * (bench/aggregate.ts, bench/soap.ts, bench/grpc.ts): `sluice run` on a config file, alone on the target core,
 * then workloads alternating round by round, each figure the data plane's CPU µs per unit of
 * work (median over the rounds).
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Pool } from 'undici';
import { treeTicks } from './cpu.ts';
import { waitReady } from './http.ts';
import { HZ, NODE, pinned, pinSelf, SLUICE_NODE_FLAGS, TARGET_CORE } from './machine.ts';
import { type Proc, start, stopAll, stopEverythingOnExit } from './processes.ts';
import { median } from './stats.ts';

/** A bench's data plane and its client: a Pool of `concurrency` connections from this process. */
export interface BenchGateway {
  gateway: Proc;
  pool: Pool;
  /** GET path; anything but 200 throws. */
  get(path: string): Promise<void>;
  close(): Promise<void>;
}

/**
 * This process on the load core (with whatever it serves: sample upstreams), everything it
 * starts stopped on exit, and `sluice run -f config` on `port`, ready.
 */
export async function startBenchGateway(
  config: string,
  port: number,
  name: string,
  concurrency: number,
): Promise<BenchGateway> {
  pinSelf();
  stopEverythingOnExit();
  const gateway = await startSluiceRun(config, port, mkdtempSync(join(tmpdir(), `sluice-bench-${name}-`)));
  const pool = new Pool(`http://127.0.0.1:${port}`, { connections: concurrency });
  return {
    gateway,
    pool,
    async get(path) {
      const r = await pool.request({ path, method: 'GET' });
      await r.body.dump();
      if (r.statusCode !== 200) throw new Error(`GET ${path}: ${r.statusCode}`);
    },
    async close() {
      await pool.close();
      await stopAll();
    },
  };
}

/** `sluice run -f config` on 127.0.0.1:port (admin port + 1), pinned to the target core, ready. */
export async function startSluiceRun(
  config: string,
  port: number,
  logDir: string,
  /** More `sluice run` flags (--https-port, certificates). */
  extra: string[] = [],
): Promise<Proc> {
  const gateway = start(
    'sluice',
    pinned(TARGET_CORE, [
      NODE,
      ...SLUICE_NODE_FLAGS,
      'bin/sluice.ts',
      'run',
      '-f',
      config,
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
      ...extra,
    ]),
    join(logDir, 'sluice.log'),
  );
  await waitReady(gateway, `http://127.0.0.1:${port + 1}/readyz`);
  return gateway;
}

export interface AlternatingOptions {
  /** Units of work per round and workload. */
  n: number;
  concurrency: number;
  rounds: number;
}

/** --requests N (BENCH_REQUESTS, 4000), --concurrency C (16), --rounds R (BENCH_ROUNDS, 3). */
export function alternatingArgs(): AlternatingOptions {
  const { values } = parseArgs({
    options: {
      requests: { type: 'string', default: process.env.BENCH_REQUESTS ?? '4000' },
      concurrency: { type: 'string', default: '16' },
      rounds: { type: 'string', default: process.env.BENCH_ROUNDS ?? '3' },
    },
  });
  return {
    n: Number(values.requests),
    concurrency: Number(values.concurrency),
    rounds: Number(values.rounds),
  };
}

export type Work = (i: number) => Promise<void>;

/** CPU µs of the gateway's process tree per unit of `work`: n units, `concurrency` at a time. */
async function measure(gateway: Proc, work: Work, n: number, concurrency: number): Promise<number> {
  const before = treeTicks(gateway.child.pid);
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < n) await work(next++);
    }),
  );
  return (((treeTicks(gateway.child.pid) - before) / HZ) * 1e6) / n;
}

/** A warm-up of each workload, then `rounds` rounds alternating them: the median µs of each, by name. */
export async function alternate<K extends string>(
  gateway: Proc,
  works: Record<K, Work>,
  opts: AlternatingOptions,
): Promise<Record<K, number>> {
  const names = Object.keys(works) as K[];
  for (const name of names) await measure(gateway, works[name], Math.min(opts.n, 1000), opts.concurrency);
  const samples = Object.fromEntries(names.map((k) => [k, [] as number[]])) as Record<K, number[]>;
  for (let r = 0; r < opts.rounds; r++)
    for (const name of names)
      samples[name].push(await measure(gateway, works[name], opts.n, opts.concurrency));
  return Object.fromEntries(names.map((k) => [k, median(samples[k])])) as Record<K, number>;
}
