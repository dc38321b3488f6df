/**
 * A real Redis Cluster for tests: 3 masters + 3 replicas, six `redis-server` processes on free
 * loopback ports (test/helpers/redis.ts's startPrivateRedis), joined by `redis-cli --cluster
 * create --cluster-replicas 1`, usable once every node says cluster_state:ok. Started with
 * `cluster-require-full-coverage no`, as the README recommends: a master's failure then stops
 * only its own slots, never the others'. Stop it with stop() (SIGKILL, data dir removed).
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { freePort, type PrivateRedis, startPrivateRedis } from './redis.ts';

const exec = promisify(execFile);

export interface RedisClusterNode extends PrivateRedis {
  address: string;
}

export interface TestRedisCluster {
  /** redis-cluster://… naming two seed nodes. */
  url: string;
  nodes: RedisClusterNode[];
  /** The nodes serving slots now (CLUSTER NODES asked of a live node). */
  masters(): Promise<RedisClusterNode[]>;
  /** The node serving a key's slot now (the key's hash tag counts, as in Redis). */
  masterOf(key: string): Promise<RedisClusterNode>;
  /** The master of every slot now: 16384 entries. */
  slotOwners(): Promise<RedisClusterNode[]>;
  /** Waits until every live node says cluster_state:ok and every slot is served by a live master. */
  waitOk(timeoutMs?: number): Promise<void>;
  stop(): Promise<void>;
}

/** Redis Cluster's slot of a key (CRC16/XMODEM of its hash tag, or of the key, mod 16384). */
export function keySlot(key: string): number {
  const open = key.indexOf('{');
  if (open !== -1) {
    const close = key.indexOf('}', open + 1);
    if (close > open + 1) key = key.slice(open + 1, close);
  }
  let crc = 0;
  for (const byte of Buffer.from(key)) {
    crc ^= byte << 8;
    for (let i = 0; i < 8; i++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc % 16384;
}

const cli = async (port: number, ...args: string[]) =>
  (await exec('redis-cli', ['-p', String(port), ...args])).stdout;

export async function startRedisCluster(opts: { nodeTimeoutMs?: number } = {}): Promise<TestRedisCluster> {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-redis-cluster-'));
  let nodes: RedisClusterNode[] = [];
  // Twice at most: a port taken between freePort's check and a node's bind fails the start
  // (startPrivateRedis says so), and the next try draws twelve new ports.
  for (let attempt = 1; ; attempt++) {
    try {
      nodes = await startNodes(dir, opts.nodeTimeoutMs ?? 2_000);
      break;
    } catch (err) {
      if (attempt === 2) {
        rmSync(dir, { recursive: true, force: true });
        throw err;
      }
    }
  }

  const alive = () => nodes.filter((n) => n.process.exitCode === null && n.process.signalCode === null);
  const masters = async () => {
    const lines = (await cli(alive()[0].port, 'cluster', 'nodes')).trim().split('\n');
    const serving = lines
      .map((l) => l.split(' '))
      .filter((f) => f[2].includes('master') && !f[2].includes('fail') && f.length > 8)
      .map((f) => f[1].split('@')[0]);
    return nodes.filter((n) => serving.includes(n.address));
  };
  const cluster: TestRedisCluster = {
    url: `redis-cluster://${nodes[0].address},${nodes[1].address}`,
    nodes,
    masters,
    async masterOf(key) {
      const owner = (await cluster.slotOwners())[keySlot(key)];
      if (!owner) throw new Error(`no master serves the slot of ${key}`);
      return owner;
    },
    async slotOwners() {
      const slots = JSON.parse(
        (await exec('redis-cli', ['-p', String(alive()[0].port), '--json', 'cluster', 'slots'])).stdout,
      ) as [number, number, [string, number, string]][];
      const owners: RedisClusterNode[] = [];
      for (const [from, to, [, port]] of slots)
        for (let s = from; s <= to; s++) owners[s] = nodes.find((n) => n.port === port)!;
      return owners;
    },
    async waitOk(timeoutMs = 30_000) {
      const until = Date.now() + timeoutMs;
      for (;;) {
        const states = await Promise.all(alive().map((n) => cli(n.port, 'cluster', 'info').catch(() => '')));
        const live = alive();
        const owners = await cluster.slotOwners().catch(() => []);
        const served = owners.length === 16384 && owners.every((n) => n !== undefined && live.includes(n));
        if (served && states.every((s) => s.includes('cluster_state:ok'))) return;
        if (Date.now() > until) throw new Error(`the Redis Cluster is not ok after ${timeoutMs} ms`);
        await sleep(100);
      }
    },
    async stop() {
      await Promise.all(nodes.map((n) => n.stop()));
      rmSync(dir, { recursive: true, force: true });
    },
  };
  await cluster.waitOk();
  // Every replica in sync with its master: a replica that never synced cannot be promoted (its
  // data is too old to count), and a master killed before would stay failed for good.
  for (const until = Date.now() + 30_000; ; ) {
    const links = await Promise.all(nodes.map((n) => cli(n.port, 'info', 'replication')));
    if (links.every((l) => l.includes('role:master') || l.includes('master_link_status:up'))) break;
    if (Date.now() > until) throw new Error('the Redis Cluster replicas did not sync within 30 s');
    await sleep(100);
  }
  return cluster;
}

/** Six nodes joined as 3 masters + 3 replicas; on a failure, those started are stopped. */
async function startNodes(dir: string, nodeTimeoutMs: number): Promise<RedisClusterNode[]> {
  const nodes: RedisClusterNode[] = [];
  try {
    // Each node's cluster bus gets its own free port: the default (port + 10,000) can be taken, or
    // beyond 65535 for a port above 55535, and the node then refuses to start.
    const ports = new Set<number>();
    while (ports.size < 12) ports.add(await freePort());
    const [clientPorts, busPorts] = [[...ports].slice(0, 6), [...ports].slice(6)];
    const started = await Promise.allSettled(
      clientPorts.map(async (port, i) => {
        const node = await startPrivateRedis(
          [
            '--cluster-enabled',
            'yes',
            '--cluster-port',
            String(busPorts[i]),
            '--cluster-config-file',
            `nodes-${port}.conf`,
            '--cluster-node-timeout',
            String(nodeTimeoutMs),
            '--cluster-require-full-coverage',
            'no',
            // A replica's first sync starts at once, not after Redis's 5 s wait for more replicas.
            '--repl-diskless-sync-delay',
            '0',
            '--dir',
            dir,
          ],
          port,
        );
        return { ...node, address: `127.0.0.1:${node.port}` };
      }),
    );
    for (const s of started) if (s.status === 'fulfilled') nodes.push(s.value);
    const failed = started.find((s) => s.status === 'rejected');
    if (failed) throw failed.reason;
    await exec('redis-cli', [
      '--cluster',
      'create',
      ...nodes.map((n) => n.address),
      '--cluster-replicas',
      '1',
      '--cluster-yes',
    ]);
    return nodes;
  } catch (err) {
    await Promise.all(nodes.map((n) => n.stop()));
    throw err;
  }
}
