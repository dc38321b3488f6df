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
  /** The upstream's origin ("https://host:port"): what a handler with a client of its own (grpc) dials. */
  readonly origin: string;
  /** Made on first use (see LazyUpstream). */
  readonly pool: Pool;
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
  readonly #pools = new Map<string, LazyUpstream>();
  readonly #onCircuit: (upstream: string, state: BreakerState) => void;

  /** Breaker state and retry budgets live here, with the pool: they survive snapshots that keep the upstream. */
  constructor(opts: { onCircuit?: (upstream: string, state: BreakerState) => void } = {}) {
    this.#onCircuit = opts.onCircuit ?? (() => {});
  }

  get(u: Upstream): UpstreamRuntime {
    let rt = this.#pools.get(u.id);
    if (rt === undefined) {
      const url = new URL(u.url);
      rt = new LazyUpstream(u, url.origin, {
        basePath: url.pathname === '/' ? '' : url.pathname.replace(/\/$/, ''),
        retry: u.retries ? { ...u.retries, budget: new RetryBudget(u.retries.budgetPercent) } : null,
        breaker: u.breaker ? new CircuitBreaker(u.breaker, (state) => this.#onCircuit(u.id, state)) : null,
      });
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
      setTimeout(() => rt.close().catch(() => {}), graceMs).unref();
    }
  }

  async closeAll(): Promise<void> {
    const all = [...this.#pools.values()];
    this.#pools.clear();
    await Promise.allSettled(all.map((rt) => rt.close()));
  }
}

/**
 * Optimization: the undici Pool is made on the upstream's first request, not when a snapshot
 * names the upstream. A Pool allocates its queues up front: 10,000 upstreams took 165–475 ms
 * and ~150 MB of heap in buildRuntime (a fresh registry: a data plane's first snapshot), most
 * of them for upstreams that may never be called.
 */
class LazyUpstream implements UpstreamRuntime {
  readonly id: string;
  readonly origin: string;
  readonly basePath: string;
  readonly headersTimeout: number;
  readonly bodyTimeout: number;
  readonly requestMs: number;
  readonly retry: UpstreamRuntime['retry'];
  readonly breaker: CircuitBreaker | null;
  readonly #origin: string;
  readonly #connectMs: number;
  #pool: Pool | null = null;
  #closed = false;

  constructor(u: Upstream, origin: string, rest: Pick<UpstreamRuntime, 'basePath' | 'retry' | 'breaker'>) {
    this.id = u.id;
    this.origin = origin;
    this.basePath = rest.basePath;
    this.headersTimeout = u.timeouts.responseMs;
    this.bodyTimeout = u.timeouts.idleMs;
    this.requestMs = u.timeouts.requestMs ?? 0;
    this.retry = rest.retry;
    this.breaker = rest.breaker;
    this.#origin = origin;
    this.#connectMs = u.timeouts.connectMs;
  }

  get pool(): Pool {
    if (this.#pool !== null) return this.#pool;
    this.#pool = new Pool(this.#origin, {
      connections: 256,
      pipelining: 1,
      keepAliveTimeout: 30_000,
      connect: { timeout: this.#connectMs },
      // Off in undici: upstream/deadlines.ts keeps the headers and body timeouts of every try
      // (undici's cost a promoted timer object a request); the WebSocket handshake sets its own.
      headersTimeout: 0,
      bodyTimeout: 0,
    });
    // Retired before its first request: a late caller gets a closed pool, as it did when pools were eager.
    if (this.#closed) this.#pool.close().catch(() => {});
    return this.#pool;
  }

  /** Closes the pool if it was ever made (and any made later). */
  async close(): Promise<void> {
    this.#closed = true;
    await this.#pool?.close();
  }
}
