/**
 * A circuit breaker per upstream: closed, it counts outcomes over a window and opens when the
 * share of failures reaches errorPercent (once minRequests were seen); open, it refuses at once
 * (the request never reaches the upstream: 503) until openMs have passed; then half-open, it
 * lets halfOpenRequests probes through: all succeed and it closes, one fails and it opens again.
 */
import type { Upstream } from '../config/route-table.ts';

export type BreakerState = 'closed' | 'open' | 'half-open';

export class CircuitBreaker {
  readonly #o: NonNullable<Upstream['breaker']>;
  readonly #now: () => number;
  readonly #onChange: (state: BreakerState) => void;
  state: BreakerState = 'closed';
  #windowStart = 0;
  #total = 0;
  #failures = 0;
  #openUntil = 0;
  #probes = 0;
  #probeSuccesses = 0;

  constructor(
    o: NonNullable<Upstream['breaker']>,
    onChange: (s: BreakerState) => void,
    now: () => number = Date.now,
  ) {
    this.#o = o;
    this.#onChange = onChange;
    this.#now = now;
    this.#windowStart = now();
  }

  /** Whether a request may go to the upstream now. */
  allow(): boolean {
    if (this.state === 'closed') return true;
    if (this.state === 'open') {
      if (this.#now() < this.#openUntil) return false;
      this.#set('half-open');
      this.#probes = 0;
      this.#probeSuccesses = 0;
    }
    if (this.#probes >= this.#o.halfOpenRequests) return false;
    this.#probes++;
    return true;
  }

  record(ok: boolean) {
    const now = this.#now();
    if (this.state === 'half-open') {
      if (!ok) return this.#open(now);
      if (++this.#probeSuccesses >= this.#o.halfOpenRequests) {
        this.#set('closed');
        this.#reset(now);
      }
      return;
    }
    if (this.state === 'open') return;
    if (now - this.#windowStart >= this.#o.windowMs) this.#reset(now);
    this.#total++;
    if (!ok) this.#failures++;
    if (this.#total >= this.#o.minRequests && this.#failures * 100 >= this.#o.errorPercent * this.#total)
      this.#open(now);
  }

  #open(now: number): void {
    this.#openUntil = now + this.#o.openMs;
    this.#set('open');
  }

  #reset(now: number): void {
    this.#windowStart = now;
    this.#total = 0;
    this.#failures = 0;
  }

  #set(state: BreakerState): void {
    if (state === this.state) return;
    this.state = state;
    this.#onChange(state);
  }
}
