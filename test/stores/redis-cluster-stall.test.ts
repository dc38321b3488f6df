/**
 * One stalled Redis Cluster master (SIGSTOP) affects only its own keys: commands for the other
 * masters' slots keep answering, the stalled node's connection alone is dropped once a PING to it
 * misses the deadline (after which its keys fail at once instead of waiting), its failure is
 * reported once, and when it resumes its keys answer again and the recovery is reported. The
 * cluster's node timeout is long (30 s) so the cluster itself does not fail the node over.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisCaller, createRedisClient } from '../../dataplane/stores/redis-connection.ts';
import { keySlot, startRedisCluster, type TestRedisCluster } from '../helpers/redis-cluster.ts';

let cluster: TestRedisCluster;
beforeAll(async () => {
  cluster = await startRedisCluster({ nodeTimeoutMs: 30_000 });
}, 60_000);
afterAll(async () => {
  await cluster?.stop();
});

interface Commands {
  get(key: string): Promise<string | null>;
}

describe('Redis Cluster: one master stalled', () => {
  it('only its keys fail; its connection alone is dropped, reported once, and recovers', async () => {
    const errors: string[] = [];
    const recovered: string[] = [];
    const caller = new RedisCaller<Commands>(createRedisClient(cluster.url), {
      timeoutMs: 300,
      onError: (err, node) => errors.push(`${node}: ${err.message}`),
      onRecover: (node) => recovered.push(node),
    });
    try {
      expect(await caller.ready(10_000)).toBe(true);
      const owners = await cluster.slotOwners();
      const victim = owners[0];
      // A key on the stalled master and one on every other master.
      const keys = new Map<string, string>();
      for (let i = 0; keys.size < 3; i++) {
        const owner = owners[keySlot(`k${i}`)];
        if (![...keys.values()].includes(owner.address)) keys.set(`k${i}`, owner.address);
      }
      const onVictim = [...keys].find(([, a]) => a === victim.address)![0];
      const elsewhere = [...keys].filter(([, a]) => a !== victim.address).map(([k]) => k);
      const get = async (key: string) => {
        const t = performance.now();
        try {
          await caller.call('get', (c) => c.get(key));
          return { ok: true, ms: performance.now() - t };
        } catch {
          return { ok: false, ms: performance.now() - t };
        }
      };

      victim.pause();
      // The first call on the stalled master waits for its deadline; the others answer.
      const first = await Promise.all([get(onVictim), ...elsewhere.map(get)]);
      expect(first.map((r) => r.ok)).toEqual([false, true, true]);
      // The PING probe misses its deadline too: only that node's connection is dropped.
      const client = caller.client as import('ioredis').Cluster;
      for (let i = 0; i < 100; i++) {
        const node = client
          .nodes('master')
          .find((n) => `${n.options.host}:${n.options.port}` === victim.address);
        if (node?.status !== 'ready') break;
        await new Promise((r) => setTimeout(r, 20));
      }
      expect(client.status).toBe('ready');
      // Now its keys fail at once, the others keep answering, for a while.
      const during: { ok: boolean; ms: number }[][] = [];
      for (let i = 0; i < 20; i++) during.push(await Promise.all([get(onVictim), ...elsewhere.map(get)]));
      expect(during.every(([v, ...others]) => !v.ok && others.every((o) => o.ok))).toBe(true);
      const failures = during.map(([v]) => v.ms).sort((a, b) => a - b);
      const median = failures[failures.length >> 1];
      console.log(
        `[redis-cluster-stall] the stalled master's keys, once its connection is dropped, fail in ${failures.map(Math.round).join(' ')} ms (deadline 300 ms); errors reported: ${JSON.stringify(errors)}`,
      );
      // At once, not at the deadline (a loaded machine may stretch a few).
      expect(median).toBeLessThan(100);
      expect(errors.filter((e) => e.startsWith(victim.address))).toHaveLength(1);

      victim.resume();
      let back = false;
      for (let i = 0; i < 150 && !back; i++) {
        back = (await get(onVictim)).ok;
        if (!back) await new Promise((r) => setTimeout(r, 50));
      }
      expect(back).toBe(true);
      expect(recovered).toContain(victim.address);
    } finally {
      for (const n of cluster.nodes) n.resume();
      await caller.close();
    }
  }, 30_000);
});
