/**
 * PoolRegistry makes each upstream's undici Pool and its own HTTP/1.1 connections on first use
 * (10,000 upstreams in a snapshot cost neither until called); a retired upstream still hands out
 * closed ones.
 */
import { describe, expect, it } from 'vitest';
import type { Upstream } from '../../dataplane/config/route-table.ts';
import { H1Pool } from '../../dataplane/upstream/h1-pool.ts';
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
    // A cleartext HTTP/1.1 upstream's requests go through the data plane's own client.
    const own = rt.pick({}, null)!.dispatcher as H1Pool;
    expect(own).toBeInstanceOf(H1Pool);
    expect(rt.pick({}, null)!.dispatcher).toBe(own);
    expect(own.closed).toBe(false);
    await pools.closeAll();
    expect(pool.closed).toBe(true);
    expect(own.closed).toBe(true);
  });

  it('an upstream retired before its first request gives a closed pool', async () => {
    const pools = new PoolRegistry();
    const rt = pools.get(upstream('upstream/a/2'));
    await pools.closeAll();
    expect(rt.pick({}, null)!.pool.closed).toBe(true);
    expect((rt.pick({}, null)!.dispatcher as H1Pool).closed).toBe(true);
  });
});
