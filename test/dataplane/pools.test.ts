/**
 * PoolRegistry makes each upstream's undici Pool on its first request (10,000 upstreams in a
 * snapshot cost no Pool until called); a retired upstream still hands out a closed pool.
 */
import { describe, expect, it } from 'vitest';
import type { Upstream } from '../../dataplane/config/route-table.ts';
import { PoolRegistry } from '../../dataplane/upstream/pools.ts';

const upstream = (id: string): Upstream => ({
  id,
  url: 'http://127.0.0.1:9/base/',
  timeouts: { connectMs: 1000, responseMs: 2000, idleMs: 3000 },
});

describe('PoolRegistry', () => {
  it('one runtime per id, its pool made once on first use', async () => {
    const pools = new PoolRegistry();
    const rt = pools.get(upstream('upstream/a/1'));
    expect(pools.get(upstream('upstream/a/1'))).toBe(rt);
    expect(rt).toMatchObject({
      id: 'upstream/a/1',
      basePath: '/base',
      headersTimeout: 2000,
      bodyTimeout: 3000,
    });
    const pool = rt.pick({}, null)!.pool;
    expect(rt.pick({}, null)!.pool).toBe(pool);
    expect(pool.closed).toBe(false);
    await pools.closeAll();
    expect(pool.closed).toBe(true);
  });

  it('an upstream retired before its first request gives a closed pool', async () => {
    const pools = new PoolRegistry();
    const rt = pools.get(upstream('upstream/a/2'));
    await pools.closeAll();
    expect(rt.pick({}, null)!.pool.closed).toBe(true);
  });
});
