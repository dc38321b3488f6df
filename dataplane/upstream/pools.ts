/**
 * One upstream runtime per upstream id, kept across snapshots: an id names its settings (it
 * carries a hash of them), so a new snapshot that keeps an upstream keeps its warm connections,
 * its breaker and its retry budget. Runtimes no longer referenced are closed gracefully
 * (in-flight requests finish).
 *
 * An upstream's connections go to its url's host, or to the endpoints the table lists (one
 * undici Pool per endpoint: endpoint.ts; of HTTP/2 sessions for an h2c upstream), spread by its balance (balancer.ts). Endpoints are not
 * part of the id: a snapshot that keeps the id with other endpoints updates them in place, once
 * it runs (retain): new ones join, and those that left are drained, not cut.
 */
import { endpointKey } from '../config/endpoints.ts';
import type { Upstream } from '../config/route-table.ts';
import { Balancer } from './balancer.ts';
import { type BreakerState, CircuitBreaker } from './circuit-breaker.ts';
import { type Dial, Endpoint } from './endpoint.ts';
import { OutlierDetector } from './outlier.ts';
import { RetryBudget } from './retry-budget.ts';

export type { Endpoint } from './endpoint.ts';

export interface UpstreamRuntime {
  id: string;
  /** The upstream's origin ("https://host:port"): what a handler with a client of its own (grpc) dials. */
  readonly origin: string;
  /**
   * Where the next try goes; null when the upstream's endpoints are none. `avoid`: the endpoint
   * of the try before (a retry goes elsewhere where there is elsewhere). The caller counts the
   * try in the endpoint's `inFlight` until its response ends.
   */
  pick(headers: Record<string, string>, avoid: Endpoint | null): Endpoint | null;
  /** Session affinity (Balancer.stick): the Set-Cookie a request without the cookie is answered with, or null. */
  stick(headers: Record<string, string>): string | null;
  /**
   * How a try on `endpoint` ended: ok, or failed (a 5xx, or no response; not a client that went
   * away). What outlier detection (outlier.ts) reads; a no-op without it.
   */
  outcome(endpoint: Endpoint, ok: boolean): void;
  /** Base path of the upstream URL without trailing "/" ('' for none). */
  basePath: string;
  /** Requests go as HTTP/2 with prior knowledge (Upstream.protocol 'h2c'; endpoint.ts). */
  readonly h2c: boolean;
  headersTimeout: number;
  bodyTimeout: number;
  /** Longest wait for the upstream to take more of a streamed request body (send-timeout.ts); 0 or absent: none. */
  sendTimeout?: number;
  /** Overall deadline to response headers, retries included; 0 = none. */
  requestMs: number;
  retry: (NonNullable<Upstream['retries']> & { budget: RetryBudget }) | null;
  breaker: CircuitBreaker | null;
}

/** How many endpoints an upstream of endpoints has: in its list (ready), and left but not yet closed (draining). */
export interface EndpointCounts {
  ready: number;
  draining: number;
}

export class PoolRegistry {
  readonly #pools = new Map<string, LazyUpstream>();
  readonly #onCircuit: (upstream: string, state: BreakerState) => void;
  readonly #onEndpoints: (upstream: string, counts: EndpointCounts) => void;

  /**
   * Breaker state and retry budgets live here, with the pool: they survive snapshots that keep the upstream.
   * onEndpoints: an upstream of endpoints whose counts changed, once a snapshot that names it runs
   * and whenever an endpoint it dropped has drained (upstreams without endpoints are never reported).
   */
  constructor(
    opts: {
      onCircuit?: (upstream: string, state: BreakerState) => void;
      onEndpoints?: (upstream: string, counts: EndpointCounts) => void;
    } = {},
  ) {
    this.#onCircuit = opts.onCircuit ?? (() => {});
    this.#onEndpoints = opts.onEndpoints ?? (() => {});
  }

  /**
   * The runtime of u's id. A runtime kept from an earlier snapshot is handed out as it is; u's
   * endpoints and balance wait for retain (the snapshot runs), so a snapshot refused after this
   * call changes nothing.
   */
  get(u: Upstream): UpstreamRuntime {
    let rt = this.#pools.get(u.id);
    if (rt === undefined) {
      const url = new URL(u.url);
      const made: LazyUpstream = new LazyUpstream(u, url.origin, {
        basePath: url.pathname === '/' ? '' : url.pathname.replace(/\/$/, ''),
        retry: u.retries
          ? { ...u.retries, budget: new RetryBudget(u.retries.budgetPercent, u.retries.minRetriesPerSecond) }
          : null,
        breaker: u.breaker ? new CircuitBreaker(u.breaker, (state) => this.#onCircuit(u.id, state)) : null,
        // A retired upstream's series are gone with it (Metrics.retain): only a registered one reports.
        onDrained: () => {
          if (this.#pools.get(u.id) === made) this.#report(made);
        },
      });
      rt = made;
      if (rt.breaker) this.#onCircuit(u.id, 'closed');
      this.#pools.set(u.id, rt);
    } else rt.stage(u);
    return rt;
  }

  /**
   * The snapshot whose upstreams are `keep` runs now: kept runtimes take the endpoints it gave
   * them (get); every other runtime closes after a grace period: a request matched on the
   * previous runtime just before the swap may still be about to dispatch on it.
   */
  retain(keep: ReadonlySet<string>, graceMs = 10_000): void {
    for (const [id, rt] of this.#pools) {
      if (keep.has(id)) {
        rt.commit();
        this.#report(rt);
        continue;
      }
      this.#pools.delete(id);
      setTimeout(() => rt.close().catch(() => {}), graceMs).unref();
    }
  }

  /** Tells onEndpoints rt's counts if they changed since last told. */
  #report(rt: LazyUpstream): void {
    const counts = rt.endpointCounts();
    if (counts === null) return;
    const key = `${counts.ready} ${counts.draining}`;
    if (rt.reported === key) return;
    rt.reported = key;
    this.#onEndpoints(rt.id, counts);
  }

  async closeAll(): Promise<void> {
    const all = [...this.#pools.values()];
    this.#pools.clear();
    await Promise.allSettled(all.map((rt) => rt.close()));
  }
}

/**
 * Optimization: undici Pools are made on an endpoint's first request, not when a snapshot names
 * the upstream. A Pool allocates its queues up front: 10,000 upstreams took 165–475 ms and
 * ~150 MB of heap in buildRuntime (a fresh registry: a data plane's first snapshot), most of
 * them for upstreams that may never be called.
 */
class LazyUpstream implements UpstreamRuntime {
  readonly id: string;
  readonly origin: string;
  readonly basePath: string;
  readonly headersTimeout: number;
  readonly bodyTimeout: number;
  readonly sendTimeout: number;
  readonly requestMs: number;
  readonly retry: UpstreamRuntime['retry'];
  readonly breaker: CircuitBreaker | null;
  readonly h2c: boolean;
  /** How its endpoints connect (the same for every endpoint). */
  readonly #dial: Dial;
  /** The url's host ("host:port"): the one endpoint's key when the table lists none. */
  readonly #host: string;
  /** The endpoints requests go to now. */
  #endpoints: Endpoint[];
  #balancer: Balancer;
  /** The balance the balancer was made for (to tell a changed one). */
  #balance: string;
  /** The upstream as the latest snapshot gave it, until commit. */
  #staged: Upstream | null = null;
  #closed = false;
  /** Whether the table lists endpoints for it (else its one endpoint is the url's host). */
  #listed: boolean;
  /** Endpoints dropped from the list whose pools have not closed yet. */
  #draining = 0;
  readonly #onDrained: () => void;
  /** The counts last given to onEndpoints (PoolRegistry's). */
  reported = '';
  #outlier: OutlierDetector | null;
  /** The outlier detection the detector was made for (to tell a changed one). */
  #outlierConfig: string;

  constructor(
    u: Upstream,
    origin: string,
    rest: Pick<UpstreamRuntime, 'basePath' | 'retry' | 'breaker'> & { onDrained: () => void },
  ) {
    this.id = u.id;
    this.origin = origin;
    this.basePath = rest.basePath;
    this.headersTimeout = u.timeouts.responseMs;
    this.bodyTimeout = u.timeouts.idleMs;
    this.sendTimeout = u.timeouts.sendMs ?? 0;
    this.requestMs = u.timeouts.requestMs ?? 0;
    this.retry = rest.retry;
    this.breaker = rest.breaker;
    this.h2c = u.protocol === 'h2c';
    this.#dial = { connectMs: u.timeouts.connectMs, h2c: this.h2c, idleMs: u.timeouts.idleMs };
    this.#host = new URL(origin).host;
    this.#onDrained = rest.onDrained;
    this.#listed = u.endpoints !== undefined;
    this.#endpoints = this.#endpointsOf(u, new Map());
    this.#balance = JSON.stringify(u.balance ?? null);
    this.#balancer = new Balancer(u.balance);
    this.#outlierConfig = JSON.stringify(u.outlierDetection ?? null);
    this.#outlier = u.outlierDetection ? new OutlierDetector(u.outlierDetection) : null;
  }

  pick(headers: Record<string, string>, avoid: Endpoint | null): Endpoint | null {
    const list = this.#outlier === null ? this.#endpoints : this.#outlier.available(this.#endpoints);
    return this.#balancer.pick(list, headers, avoid);
  }

  stick(headers: Record<string, string>): string | null {
    return this.#balancer.stick(headers);
  }

  outcome(endpoint: Endpoint, ok: boolean): void {
    this.#outlier?.record(this.#endpoints, endpoint, ok);
  }

  stage(u: Upstream): void {
    this.#staged = u;
  }

  /** Takes the staged endpoints, balance and outlier detection: endpoints kept keep their pool (and ejection state), those gone are drained. */
  commit(): void {
    const u = this.#staged;
    if (u === null) return;
    this.#staged = null;
    const balance = JSON.stringify(u.balance ?? null);
    if (balance !== this.#balance) {
      this.#balance = balance;
      this.#balancer = new Balancer(u.balance);
    }
    const outlier = JSON.stringify(u.outlierDetection ?? null);
    if (outlier !== this.#outlierConfig) {
      this.#outlierConfig = outlier;
      this.#outlier = u.outlierDetection ? new OutlierDetector(u.outlierDetection) : null;
    }
    if (this.#closed || sameEndpoints(this.#endpoints, u, this.#host)) return;
    this.#listed = u.endpoints !== undefined;
    const old = new Map(this.#endpoints.map((e) => [e.key, e]));
    this.#endpoints = this.#endpointsOf(u, old);
    for (const e of this.#endpoints) old.delete(e.key);
    // Out of the list already: no new try picks them; undici's close lets those under way finish.
    for (const gone of old.values()) {
      this.#draining++;
      gone
        .close()
        .catch(() => {})
        .finally(() => {
          this.#draining--;
          this.#onDrained();
        });
    }
  }

  /** null: an upstream without endpoints (its url's host). */
  endpointCounts(): EndpointCounts | null {
    return this.#listed ? { ready: this.#endpoints.length, draining: this.#draining } : null;
  }

  /** u's endpoints (the url's host when it lists none), reusing those of `old` by key. */
  #endpointsOf(u: Upstream, old: ReadonlyMap<string, Endpoint>): Endpoint[] {
    if (u.endpoints === undefined)
      return [old.get(this.#host) ?? new Endpoint(this.origin, this.#dial, null)];
    return u.endpoints.map((at) => old.get(endpointKey(at)) ?? new Endpoint(this.origin, this.#dial, at));
  }

  /** Closes every pool ever made (and any made later). */
  async close(): Promise<void> {
    this.#closed = true;
    await Promise.allSettled(this.#endpoints.map((e) => e.close()));
  }
}

/** Whether the list already is u's endpoints, in u's order (the common case: nothing changed). */
function sameEndpoints(list: readonly Endpoint[], u: Upstream, host: string): boolean {
  const given = u.endpoints;
  if (given === undefined) return list.length === 1 && list[0].key === host;
  if (given.length !== list.length) return false;
  for (let i = 0; i < given.length; i++) if (list[i].key !== endpointKey(given[i])) return false;
  return true;
}
