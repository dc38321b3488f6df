/**
 * A Redis watched by a Sentinel for tests: a private master (redis.ts) and one `redis-server
 * --sentinel` on free loopback ports, usable once the Sentinel names the master. The URL is
 * `redis-sentinel://127.0.0.1:<sentinel port>/mymaster`. stop() kills both and removes the dir.
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
  stop(): Promise<void>;
}

export async function startRedisSentinel(): Promise<TestRedisSentinel> {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-sentinel-'));
  const master = await startPrivateRedis();
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
    rmSync(dir, { recursive: true, force: true });
  };
  const probe = new Redis({ port: sentinelPort, lazyConnect: true, retryStrategy: () => null });
  probe.on('error', () => {}); // refused until the sentinel listens
  try {
    for (let i = 0; ; i++) {
      try {
        await probe.connect();
        const addr = (await probe.call('SENTINEL', 'get-master-addr-by-name', 'mymaster')) as string[] | null;
        if (addr?.[1] === String(master.port)) break;
      } catch {}
      probe.disconnect();
      if (i > 100) throw new Error('sentinel did not start');
      await sleep(100);
    }
  } catch (err) {
    await stop();
    throw err;
  } finally {
    probe.disconnect();
  }
  return { url: `redis-sentinel://127.0.0.1:${sentinelPort}/mymaster`, master, sentinel, sentinelPort, stop };
}
