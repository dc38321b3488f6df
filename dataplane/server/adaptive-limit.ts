/**
 * The adaptive concurrency limit (--adaptive-concurrency): a gradient limiter on observed
 * latency, in the style of Netflix concurrency-limits (Gradient2) and Envoy's adaptive
 * concurrency filter. Every admitted request's latency is a sample; once per window the window's
 * mean (sampleRtt) is compared with the floor latency (minRtt, the smallest window mean of the
 * last one to two MIN_RTT_PERIOD_MS):
 *
 *   gradient = clamp(minRtt × TOLERANCE / sampleRtt, 0.5, 1)
 *   target   = limit × gradient + √limit          (√limit: the queue allowance)
 *   limit    = limit × (1 − SMOOTHING) + target × SMOOTHING, within [MIN_LIMIT, max]
 *
 * so the limit falls while requests queue (latency over the floor) and grows by about
 * √limit × SMOOTHING per window while they do not. Requests past the limit are shed at once
 * (503 + Retry-After) instead of queueing: a client retries elsewhere rather than waiting.
 *
 * What it sees is the process's latency, all routes mixed (answers under 400 only: refusals
 * are too fast to compare): it suits a process whose mix of routes is steady. Long streams
 * (SSE, NDJSON) read as slow requests, and a sudden shift towards much faster routes (cache
 * hits) lowers the floor for a period; for such traffic the fixed bound alone is the better fit.
 *
 * Hand-written: no maintained npm package implements a latency-gradient limiter (the load
 * shedders on npm, under-pressure and overload-protection, watch event-loop delay and memory, a
 * different signal that reacts only once the process itself is saturated); this is ~60 lines.
 * The clock is given (milliseconds), so its behaviour is testable step by step.
 */

/** A window lasts this long and holds at least MIN_SAMPLES (Envoy updates its limit every 100 ms). */
const WINDOW_MS = 100;
/** Fewer samples give a mean too noisy to move the limit on: the window is extended until there are this many. */
const MIN_SAMPLES = 20;
/**
 * How much over the floor latency may rise before the limit falls (Gradient2's default
 * rttTolerance): a window mean 1.5× the floor is still "not queueing", so ordinary jitter does
 * not shed.
 */
const TOLERANCE = 1.5;
/** The share of a window's target the limit moves by (Gradient2's default smoothing): no lurch on one window. */
const SMOOTHING = 0.2;
/** The lowest limit: a process always admits some concurrency, so it keeps sampling and can recover. */
const MIN_LIMIT = 10;
/** The limit at start: it grows from here once requests fill half of it (√100 × 0.2 = +2 per window). */
const INITIAL_LIMIT = 100;
/**
 * The floor is the smallest window mean of the current and the previous period: a floor that
 * moved up for good (a slower upstream after a deploy) is followed within two periods.
 */
const MIN_RTT_PERIOD_MS = 30_000;

export class AdaptiveLimit {
  readonly #max: number;
  readonly #now: () => number;
  #limit: number;
  #windowStart: number;
  #sum = 0;
  #samples = 0;
  /** The most requests in flight seen in the window: a limit nobody fills is not raised. */
  #peak = 0;
  #periodStart: number;
  #periodMin = Number.POSITIVE_INFINITY;
  #previousMin = Number.POSITIVE_INFINITY;

  /** `max`: the fixed limit (--max-in-flight); `now`: a clock in milliseconds. */
  constructor(max: number, now: () => number) {
    this.#max = max;
    this.#now = now;
    this.#limit = Math.min(INITIAL_LIMIT, max);
    this.#windowStart = now();
    this.#periodStart = this.#windowStart;
  }

  /** Requests admitted at once now. */
  get limit(): number {
    return Math.floor(this.#limit);
  }

  /** One request's latency, and how many were in flight when it was admitted. */
  sample(rttMs: number, inFlight: number): void {
    this.#sum += rttMs;
    this.#samples++;
    if (inFlight > this.#peak) this.#peak = inFlight;
    const now = this.#now();
    if (now - this.#windowStart < WINDOW_MS || this.#samples < MIN_SAMPLES) return;
    this.#update(this.#sum / this.#samples, now);
    this.#windowStart = now;
    this.#sum = 0;
    this.#samples = 0;
    this.#peak = 0;
  }

  #update(rtt: number, now: number): void {
    if (now - this.#periodStart >= MIN_RTT_PERIOD_MS) {
      this.#previousMin = this.#periodMin;
      this.#periodMin = Number.POSITIVE_INFINITY;
      this.#periodStart = now;
    }
    if (rtt < this.#periodMin) this.#periodMin = rtt;
    const minRtt = Math.min(this.#periodMin, this.#previousMin);
    const limit = this.#limit;
    const gradient = Math.max(0.5, Math.min(1, (minRtt * TOLERANCE) / rtt));
    const target = limit * gradient + Math.sqrt(limit);
    if (target > limit && this.#peak < limit / 2) return;
    const next = limit * (1 - SMOOTHING) + target * SMOOTHING;
    this.#limit = Math.max(MIN_LIMIT, Math.min(this.#max, next));
  }
}
