/**
 * A Redis watched by a Sentinel for tests: a private master (redis.ts) and one `redis-server
 * --sentinel` on free loopback ports, usable once the Sentinel names the master. The URL is
 * `redis-sentinel://127.0.0.1:<sentinel port>/mymaster`. stop() kills them all and removes the dir.
 *
 * With `{ replica: true }`, also a replica of the master, usable once the Sentinel lists it as
 * healthy: kill the master and the Sentinel promotes it (2 s to notice, quorum 1);
 * `masterPort()` says which port the Sentinel names now.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { freePort, type PrivateRedis, startPrivateRedis } from './redis.ts';

export interface TestRedisSentinel {
  url: string;
  master: PrivateRedis;
  sentinel: ChildProcess;
  sentinelPort: number;
  replica: PrivateRedis | null;
  /** The master's port as the Sentinel names it now (null: it names none). */
  masterPort(): Promise<number | null>;
  stop(): Promise<void>;
}

export async function startRedisSentinel(opts: { replica?: boolean } = {}): Promise<TestRedisSentinel> {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-sentinel-'));
  // The full sync to a replica writes an RDB file: in the temp dir, not the tests' working directory.
  const master = await startPrivateRedis(['--dir', dir]);
  const replica = opts.replica
    ? await startPrivateRedis(['--dir', dir, '--replicaof', '127.0.0.1', String(master.port)])
    : null;
  const sentinelPort = await freePort();
  const conf = join(dir, 'sentinel.conf');
  writeFileSync(
    conf,
    [
      `port ${sentinelPort}`,
      'bind 127.0.0.1',
      `dir ${dir}`,
      `sentinel monitor mymaster 127.0.0.1 ${master.port} 1`,
      'sentinel down-after-milliseconds mymaster 2000',
      'sentinel failover-timeout mymaster 10000',
      '',
    ].join('\n'),
  );
  const sentinel = spawn('redis-server', [conf, '--sentinel'], { stdio: 'ignore' });
  const stop = async () => {
    if (sentinel.exitCode === null && sentinel.signalCode === null) {
      sentinel.kill('SIGKILL');
      await once(sentinel, 'exit').catch(() => {});
    }
    await master.stop();
    await replica?.stop();
    rmSync(dir, { recursive: true, force: true });
  };
  const probe = new Redis({ port: sentinelPort, lazyConnect: true, retryStrategy: () => null });
  probe.on('error', () => {}); // refused until the sentinel listens
  try {
    for (let i = 0; ; i++) {
      try {
        await probe.connect();
        const addr = (await probe.call('SENTINEL', 'get-master-addr-by-name', 'mymaster')) as string[] | null;
        const replicas = replica
          ? ((await probe.call('SENTINEL', 'replicas', 'mymaster')) as string[][])
          : [];
        // A replica's fields are a flat [name, value, …] list; flags "slave" alone: seen, healthy.
        const healthy = replicas.some((r) => r[r.indexOf('flags') + 1] === 'slave');
        if (addr?.[1] === String(master.port) && (replica === null || healthy)) break;
      } catch {}
      probe.disconnect();
      // The Sentinel learns of a replica from the master's INFO, asked every 10 s.
      if (i > (replica ? 300 : 100)) throw new Error('sentinel did not start');
      await sleep(100);
    }
  } catch (err) {
    await stop();
    throw err;
  } finally {
    probe.disconnect();
  }
  const masterPort = async () => {
    const r = new Redis({ port: sentinelPort, lazyConnect: true, retryStrategy: () => null });
    r.on('error', () => {});
    try {
      await r.connect();
      const addr = (await r.call('SENTINEL', 'get-master-addr-by-name', 'mymaster')) as string[] | null;
      return addr === null ? null : Number(addr[1]);
    } finally {
      r.disconnect();
    }
  };
  return {
    url: `redis-sentinel://127.0.0.1:${sentinelPort}/mymaster`,
    master,
    sentinel,
    sentinelPort,
    replica,
    masterPort,
    stop,
  };
}
