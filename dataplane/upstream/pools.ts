/**
 * One undici Pool per upstream id, kept across snapshots: an id names its settings (it carries
 * a hash of them), so a new snapshot that keeps an upstream keeps its warm connections. Pools
 * no longer referenced are closed gracefully (in-flight requests finish).
 */
import { Pool } from 'undici';
import type { Upstream } from '../config/route-table.ts';
import { type BreakerState, CircuitBreaker } from './circuit-breaker.ts';
import { RetryBudget } from './retry-budget.ts';

export interface UpstreamRuntime {
  id: string;
  pool: Pool;
  /** Base path of the upstream URL without trailing "/" ('' for none). */
  basePath: string;
  headersTimeout: number;
  bodyTimeout: number;
  /** Overall deadline to response headers, retries included; 0 = none. */
  requestMs: number;
  retry: (NonNullable<Upstream['retries']> & { budget: RetryBudget }) | null;
  breaker: CircuitBreaker | null;
}

export class PoolRegistry {
  readonly #pools = new Map<string, UpstreamRuntime>();
  readonly #onCircuit: (upstream: string, state: BreakerState) => void;

  /** Breaker state and retry budgets live here, with the pool: they survive snapshots that keep the upstream. */
  constructor(opts: { onCircuit?: (upstream: string, state: BreakerState) => void } = {}) {
    this.#onCircuit = opts.onCircuit ?? (() => {});
  }

  get(u: Upstream): UpstreamRuntime {
    let rt = this.#pools.get(u.id);
    if (rt === undefined) {
      const url = new URL(u.url);
      rt = {
        id: u.id,
        pool: new Pool(url.origin, {
          connections: 256,
          pipelining: 1,
          keepAliveTimeout: 30_000,
          connect: { timeout: u.timeouts.connectMs },
          headersTimeout: u.timeouts.responseMs,
          bodyTimeout: u.timeouts.idleMs,
        }),
        basePath: url.pathname === '/' ? '' : url.pathname.replace(/\/$/, ''),
        headersTimeout: u.timeouts.responseMs,
        bodyTimeout: u.timeouts.idleMs,
        requestMs: u.timeouts.requestMs ?? 0,
        retry: u.retries ? { ...u.retries, budget: new RetryBudget(u.retries.budgetPercent) } : null,
        breaker: u.breaker ? new CircuitBreaker(u.breaker, (state) => this.#onCircuit(u.id, state)) : null,
      };
      if (rt.breaker) this.#onCircuit(u.id, 'closed');
      this.#pools.set(u.id, rt);
    }
    return rt;
  }

  /**
   * Closes every pool whose id is not in keep, after a grace period: a request matched on the
   * previous runtime just before the swap may still be about to dispatch on it.
   */
  retain(keep: ReadonlySet<string>, graceMs = 10_000): void {
    for (const [id, rt] of this.#pools) {
      if (keep.has(id)) continue;
      this.#pools.delete(id);
      setTimeout(() => rt.pool.close().catch(() => {}), graceMs).unref();
    }
  }

  async closeAll(): Promise<void> {
    const all = [...this.#pools.values()];
    this.#pools.clear();
    await Promise.allSettled(all.map((rt) => rt.pool.close()));
  }
}
