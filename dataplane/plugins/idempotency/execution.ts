/**
 * One execution under a claimed record: holds the lease (renewed by leases.ts every third of it,
 * give or take a sixth, while the upstream call runs) and ends in exactly one of three ways:
 *  - complete: the response is stored, COMPLETED, and replays begin;
 *  - release: the request never reached the upstream (connection refused, …): no record is
 *    left, the client may simply retry;
 *  - abandon: the request may have reached the upstream but no complete response came back.
 *    The record stays IN_PROGRESS, the lease is no longer renewed and lapses, and the next
 *    request with the key takes over. The backend, which got the Idempotency-Key, is what can
 *    make that second execution safe (spec §2.1 rule 3).
 * With tracing on, the store round trips of complete and release are spans under the request's
 * server span (as the claim is); the background retries of a failed complete are not (the
 * request they belong to was answered long before).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { IdempotencyStore, StoredResponse } from '../../stores/idempotency-store.ts';
import type { RuntimeDeps } from '../../pipeline/route.ts';
import { type Span, traced } from '../../observability/tracing.ts';
import type { Held, Leases } from './leases.ts';
import type { IdempotencyMetrics } from './metrics.ts';

const COMPLETE_SPAN = { 'sluice.store': 'idempotency', 'db.operation.name': 'complete' };
const RELEASE_SPAN = { 'sluice.store': 'idempotency', 'db.operation.name': 'release' };

export class Execution implements Held {
  readonly #store: IdempotencyStore;
  readonly #id: string;
  readonly #owner: string;
  readonly #routeId: string;
  readonly #deps: RuntimeDeps;
  readonly #metrics: IdempotencyMetrics;
  /** The request's server span (tracing on), else null. */
  readonly #span: Span | null;
  readonly #leases: Leases;
  /** Set by #leases. */
  due = 0;
  #ended = false;

  constructor(
    store: IdempotencyStore,
    id: string,
    owner: string,
    leases: Leases,
    routeId: string,
    deps: RuntimeDeps,
    metrics: IdempotencyMetrics,
    span: Span | null,
  ) {
    this.#store = store;
    this.#span = span;
    this.#id = id;
    this.#owner = owner;
    this.#routeId = routeId;
    this.#deps = deps;
    this.#metrics = metrics;
    this.#leases = leases;
    leases.hold(this);
  }

  renew(): void {
    this.#store.renew(this.#id, this.#owner, this.#leases.leaseMs).then(
      (held) => {
        if (held || this.#ended) return;
        this.#stop();
        this.#metrics.later(this.#routeId, 'lease_lost');
        this.#deps.log.warn(
          { route: this.#routeId },
          'idempotency: the record is no longer ours (lease lost)',
        );
      },
      (err) => this.#deps.log.warn({ err, route: this.#routeId }, 'idempotency: could not renew the lease'),
    );
  }

  #stop(): void {
    this.#leases.drop(this);
  }

  /**
   * Stores the response; never rejects. If the store fails, the client still gets its response
   * and storing is retried in the background for COMPLETE_RETRY_MS: a retry that comes after
   * the store is back then finds COMPLETED rather than a lapsed lease to take over.
   */
  async complete(response: StoredResponse): Promise<void> {
    if (this.#ended) return;
    this.#ended = true;
    this.#stop();
    const store = () => this.#store.complete(this.#id, this.#owner, response);
    try {
      const first =
        this.#span === null ? store() : traced(this.#span, 'idempotency complete', COMPLETE_SPAN, store());
      if (!(await first)) this.#metrics.later(this.#routeId, 'lease_lost');
    } catch (err) {
      this.#metrics.later(this.#routeId, 'store_error');
      this.#deps.log.error(
        { err, route: this.#routeId },
        'idempotency: could not store the response; retrying',
      );
      this.#deps.background.run(
        keepTrying(store, COMPLETE_RETRY_MS).then((done) => {
          if (!done)
            this.#deps.log.error({ route: this.#routeId }, 'idempotency: gave up storing the response');
        }),
      );
    }
  }

  /** The upstream call failed: release the record when it cannot have been acted on, else let the lease lapse. */
  fail(sent: boolean): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#stop();
    if (sent) return;
    const pending = this.#store.release(this.#id, this.#owner);
    (this.#span === null ? pending : traced(this.#span, 'idempotency release', RELEASE_SPAN, pending)).catch(
      (e) =>
        this.#deps.log.warn({ err: e, route: this.#routeId }, 'idempotency: could not release the record'),
    );
  }
}

/** How long a response whose storing failed is retried (the store is usually back well before). */
export const COMPLETE_RETRY_MS = 30_000;

/** Runs a store operation again (100 ms doubling to 2 s) until it succeeds or `forMs` has passed. */
export async function keepTrying(op: () => Promise<unknown>, forMs: number): Promise<boolean> {
  const until = Date.now() + forMs;
  for (let pause = 100; Date.now() < until; pause = Math.min(pause * 2, 2_000)) {
    await sleep(Math.min(pause, Math.max(until - Date.now(), 0)));
    try {
      await op();
      return true;
    } catch {}
  }
  return false;
}
