/**
 * The leases of one plugin instance's running executions, renewed by one timer.
 *
 * Optimization: each execution had a setInterval of its own (a Timeout object, an insert into
 * the timer list, unref's call into the event loop). Here starting and ending an execution is one
 * Set insert and one delete: an execution's construction 5.2 → 3.1 thousand instructions
 * (bench/README.md, "One timer for the leases of running executions"), and one timer however many
 * executions run. The timer ticks every sixth of the lease and renews the leases due:
 * each is renewed between a third and a half of a lease after the last time (it was every third),
 * so never near its end. It stops at the first tick that finds no execution running: idle means
 * idle, and a steady trickle of requests does not start and stop it each time.
 */

/** What the timer renews: an execution. */
export interface Held {
  /** When its lease is next renewed (performance.now()); the timer sets it. */
  due: number;
  renew(): void;
}

export class Leases {
  readonly leaseMs: number;
  /** Between renewals of one lease: a third of it. */
  readonly #every: number;
  readonly #tickMs: number;
  /** In the order they are due: a lease renewed moves to the end. */
  readonly #held = new Set<Held>();
  #timer: NodeJS.Timeout | null = null;

  constructor(leaseMs: number) {
    this.leaseMs = leaseMs;
    this.#every = Math.max(Math.floor(leaseMs / 3), 10);
    this.#tickMs = Math.max(Math.floor(leaseMs / 6), 5);
  }

  hold(h: Held): void {
    h.due = performance.now() + this.#every;
    this.#held.add(h);
    if (this.#timer === null) {
      this.#timer = setInterval(() => this.#tick(), this.#tickMs);
      this.#timer.unref();
    }
  }

  drop(h: Held): void {
    this.#held.delete(h);
  }

  /** Executions whose lease the timer renews. */
  get size(): number {
    return this.#held.size;
  }

  /** Whether the timer runs. */
  get ticking(): boolean {
    return this.#timer !== null;
  }

  #tick(): void {
    if (this.#held.size === 0) {
      clearInterval(this.#timer!);
      this.#timer = null;
      return;
    }
    const now = performance.now();
    // Renewed ones go to the end, due later than now: the loop stops when it reaches them. Each
    // is next due a third of a lease after its own renewal, not after the tick's start: with
    // thousands running, the last ones of a slow tick were renewed a few ms later than the
    // first, and their next renewal came that much sooner than a third of a lease.
    for (const h of this.#held) {
      if (h.due > now) break;
      this.#held.delete(h);
      h.due = performance.now() + this.#every;
      this.#held.add(h);
      h.renew();
    }
  }
}
