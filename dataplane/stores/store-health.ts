/**
 * Whether a shared store answers, as seen by one plugin instance: its failures are logged once
 * when they start and once when the store answers again, never once per request (a Redis away
 * for 5 s at 1,000 requests/s would write 5,000 lines; the metrics count every failure).
 */
import type { Logger } from 'pino';

export class StoreHealth {
  readonly #what: string;
  #failing = false;

  /** `what` names the store in the log lines: "rate limit store", "idempotency store". */
  constructor(what: string) {
    this.#what = what;
  }

  failed(log: Logger, fields: Record<string, unknown>, err: unknown): void {
    if (this.#failing) return;
    this.#failing = true;
    log.warn({ ...fields, err: (err as Error)?.message ?? String(err) }, `${this.#what} unavailable`);
  }

  answered(log: Logger, fields: Record<string, unknown>): void {
    if (!this.#failing) return;
    this.#failing = false;
    log.info(fields, `${this.#what} answers again`);
  }
}
