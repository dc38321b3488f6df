/**
 * Passive outlier detection (route-table.ts `outlierDetection`): what the tries of an upstream's
 * endpoints answered decides which are left out of the balance for a while. Passive: no probes,
 * only the traffic itself; an ejected endpoint comes back when its time is up, and a failure
 * then ejects it again, for longer (base × times ejected, capped), as Envoy's outlier detection.
 *
 * - A failure is a 5xx, or a try with no response (connect failure, reset, timeout); a client
 *   that went away is neither. Any other answer resets the endpoint's run of failures.
 * - At most maxEjectionPercent of the endpoints (rounded down) are out at once: a Service whose
 *   pods all fail keeps the share it is allowed, and the rest keep their traffic (and keep
 *   failing, which is the truth: ejection would only have moved the load onto fewer pods).
 * - The times ejected start over once an endpoint has stayed in for maxEjectionMs after its last
 *   ejection ended.
 * Ejection state lives on the Endpoint, kept across snapshots while the endpoint stays.
 */
import type { OutlierDetection } from '../config/route-table.ts';

/** What the detector reads and writes of an endpoint. */
export interface Ejectable {
  /** Failures in a row. */
  failures: number;
  /** Ejected until this time (ms since the epoch); 0 or past: in. */
  ejectedUntil: number;
  /** Times ejected in this run (sets the next ejection's length). */
  ejections: number;
}

export class OutlierDetector {
  readonly #c: OutlierDetection;
  /** The latest ejectedUntil given: before it, some endpoint may be out (the fast path is one clock read). */
  #until = 0;

  constructor(config: OutlierDetection) {
    this.#c = config;
  }

  /** The endpoints a try may go to now: `list` itself while none is ejected. */
  available<T extends Ejectable>(list: readonly T[]): readonly T[] {
    if (this.#until === 0) return list;
    const now = Date.now();
    if (now >= this.#until) {
      this.#until = 0;
      return list;
    }
    const out = list.filter((e) => e.ejectedUntil <= now);
    // All out (maxEjectionPercent 100, or endpoints dropped since): better some than none.
    return out.length === 0 ? list : out;
  }

  /** A try on `e`, one of `list` (the upstream's endpoints now), ended: ok or failed. */
  record<T extends Ejectable>(list: readonly T[], e: T, ok: boolean): void {
    if (ok) {
      e.failures = 0;
      return;
    }
    e.failures++;
    if (e.failures < this.#c.consecutiveFailures) return;
    const now = Date.now();
    // Already out (a try picked before it was ejected), or dropped from the list: nothing to do.
    if (e.ejectedUntil > now || !list.includes(e)) return;
    let out = 0;
    for (const x of list) if (x.ejectedUntil > now) out++;
    // Still failing, still counted: it is ejected by the first failure that finds room.
    if (out + 1 > Math.floor((list.length * this.#c.maxEjectionPercent) / 100)) return;
    if (e.ejectedUntil !== 0 && now - e.ejectedUntil > this.#c.maxEjectionMs) e.ejections = 0;
    e.ejections++;
    e.failures = 0;
    e.ejectedUntil = now + Math.min(this.#c.baseEjectionMs * e.ejections, this.#c.maxEjectionMs);
    if (e.ejectedUntil > this.#until) this.#until = e.ejectedUntil;
  }
}
