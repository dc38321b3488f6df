/**
 * Redis for tests. `sharedRedisUrl` is the machine's server (SLUICE_TEST_REDIS_URL, default
 * 127.0.0.1:6379), or the private one global-redis.ts starts when that one does not answer; each
 * test takes its own key prefix there. Fault tests start a private `redis-server` on a free
 * port, which they can pause (SIGSTOP), resume and kill without disturbing anyone else.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { freePort } from './free-port.ts';

export { freePort };

export const defaultRedisUrl = 'redis://127.0.0.1:6379';
export const sharedRedisUrl = process.env.SLUICE_TEST_REDIS_URL ?? defaultRedisUrl;

/** A key prefix no other test uses. */
export const uniquePrefix = (what = 'test') => `sluice-test:${what}:${randomBytes(6).toString('hex')}:`;

export interface PrivateRedis {
  url: string;
  port: number;
  process: ChildProcess;
  pause(): void;
  resume(): void;
  stop(): Promise<void>;
}

/**
 * A redis-server on `port` (default: a free one), waited on until it answers PING, and checked
 * to be this one (INFO's process_id): a port taken between freePort's check and the server's
 * bind would otherwise have the probe answered by someone else's server while ours exited. On
 * such a race a free port is drawn again (twice at most); a port the caller named is not.
 */
export async function startPrivateRedis(args: string[] = [], port?: number): Promise<PrivateRedis> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOn(args, port ?? (await freePort()));
    } catch (err) {
      if (port !== undefined || attempt === 3) throw err;
    }
  }
}

async function startOn(args: string[], port: number): Promise<PrivateRedis> {
  const child = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', ...args],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  // The server's last words, for the error when it does not start (its log goes to stdout).
  let said = '';
  const keep = (chunk: Buffer) => {
    said = (said + chunk.toString()).slice(-2_000);
  };
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  const failed = (why: string) => {
    child.kill('SIGKILL');
    return new Error(`redis-server on port ${port} ${why}${said ? `: ${said.trim()}` : ''}`);
  };
  const probe = new Redis({ port, lazyConnect: true, retryStrategy: () => null, maxRetriesPerRequest: 0 });
  probe.on('error', () => {}); // refused until the server listens: expected while polling
  try {
    for (let i = 0; ; i++) {
      try {
        await probe.connect();
        await probe.ping();
        break;
      } catch {
        probe.disconnect();
        if (i > 100 || child.exitCode !== null) throw failed('did not start');
        await sleep(50);
      }
    }
    const pid = /process_id:(\d+)/.exec(await probe.info('server'))?.[1];
    if (pid !== String(child.pid)) throw failed(`is another process's (pid ${pid}, ours ${child.pid})`);
  } finally {
    probe.disconnect();
  }
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    process: child,
    pause: () => child.kill('SIGSTOP'),
    resume: () => child.kill('SIGCONT'),
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGCONT');
      child.kill('SIGKILL');
      await once(child, 'exit');
    },
  };
}

/** Deletes every key under a prefix (SCAN, not KEYS). */
export async function dropPrefix(url: string, prefix: string): Promise<void> {
  const r = new Redis(url);
  try {
    let cursor = '0';
    do {
      const [next, keys] = await r.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length) await r.del(...keys);
    } while (cursor !== '0');
  } finally {
    r.disconnect();
  }
}
