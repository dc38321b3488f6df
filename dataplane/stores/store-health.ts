/**
 * Whether a shared store answers, as seen by one plugin instance: its failures are logged when
 * they start and once more when the store has answered for QUIET_MS with no failure (with how
 * many failed meanwhile), never once per request: a Redis away for 5 s at 1,000 requests/s would
 * write 5,000 lines, and during a Cluster failover the keys of the other masters keep answering
 * between the failures, which must not make the state flap. The metrics count every failure.
 */
import type { Logger } from 'pino';

const QUIET_MS = 5_000;

export class StoreHealth {
  readonly #what: string;
  readonly #now: () => number;
  /** Failures since the store started failing (0: healthy). */
  #failures = 0;
  #since = 0;
  #lastFailure = 0;

  /** `what` names the store in the log lines: "rate limit store", "idempotency store". */
  constructor(what: string, now: () => number = Date.now) {
    this.#what = what;
    this.#now = now;
  }

  failed(log: Logger, fields: Record<string, unknown>, err: unknown): void {
    this.#lastFailure = this.#now();
    if (this.#failures++ > 0) return;
    this.#since = this.#lastFailure;
    log.warn({ ...fields, err: (err as Error)?.message ?? String(err) }, `${this.#what} unavailable`);
  }

  answered(log: Logger, fields: Record<string, unknown>): void {
    if (this.#failures === 0) return;
    const now = this.#now();
    if (now - this.#lastFailure < QUIET_MS) return;
    log.info(
      { ...fields, failures: this.#failures, failingMs: this.#lastFailure - this.#since },
      `${this.#what} answers again`,
    );
    this.#failures = 0;
  }
}
