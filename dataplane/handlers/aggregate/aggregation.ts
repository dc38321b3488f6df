/**
 * One aggregated request: every call dispatched at once through upstream/call.ts, each under its
 * own timer (never longer than the aggregate's timeout, so the last timer is the overall
 * deadline), and one answer as soon as it is known: every call settled, or a required one failed.
 * The answer is a JSON object with a member per call in the route's order (null for a failed
 * optional call, listed in "errors" by name and code, never with the upstream's body), or a
 * 502/504 problem naming the required call that failed. It goes to the route's ResponseSink,
 * so response plugins (cache, idempotency, transformers) see it like any upstream answer.
 */
import type { Abortable } from '../../upstream/abortable.ts';
import { endCallSpan, type Span, startCallSpan } from '../../observability/tracing.ts';
import { ERRORS, type ErrorCode } from '../../errors/codes.ts';
import { problem } from '../../errors/problem.ts';
import type { Metrics } from '../../observability/metrics.ts';
import type { Sources } from '../../config/template.ts';
import { type PathRewrite, renderPath } from '../../pipeline/transform/path-rewrite.ts';
import { callUpstream, type ResponseSink } from '../../upstream/call.ts';
import { upstreamErrorCode } from '../../upstream/errors.ts';
import type { UpstreamRuntime } from '../../upstream/pools.ts';
import { deliverJson } from '../deliver.ts';
import { CallSink, type CallOwner, type Outcome } from './call-sink.ts';
import { ERRORS_MEMBER } from './manifest.ts';

/** A call as bound to its route, once per snapshot. */
export interface BoundCall {
  name: string;
  required: boolean;
  timeoutMs: number;
  up: UpstreamRuntime;
  path: PathRewrite;
}

/** The route's aggregate, bound once per snapshot. */
export interface BoundAggregate {
  routeId: string;
  calls: readonly BoundCall[];
  maxBodyBytes: number;
  metrics: Metrics;
  /** Times one backend call (metrics.ts). */
  callTime: (route: string, call: string, result: 'ok' | 'error' | 'timeout', startNs: bigint) => void;
}

interface ErrorEntry {
  call: string;
  code: ErrorCode;
  title: string;
  upstreamStatus?: number;
}

export class Aggregation implements CallOwner {
  readonly #agg: BoundAggregate;
  readonly #sink: ResponseSink;
  readonly #requestId: string;
  readonly #outcomes: (Outcome | undefined)[];
  readonly #timers: (NodeJS.Timeout | undefined)[];
  /** Withdraws a call no longer wanted: never sent if still queued in its pool, else cut. */
  readonly #aborts: AbortController[] = [];
  readonly #startNs = process.hrtime.bigint();
  /** Each call's span (tracing on), else null. */
  #spans: Span[] | null = null;
  #pending: number;
  #budget: number;
  #done = false;
  /** The client's signal and its listener: the client gone, every call is withdrawn. */
  #signal: Abortable | null = null;
  #onGone: (() => void) | null = null;

  constructor(agg: BoundAggregate, sink: ResponseSink, requestId: string) {
    this.#agg = agg;
    this.#sink = sink;
    this.#requestId = requestId;
    this.#outcomes = new Array(agg.calls.length);
    this.#timers = new Array(agg.calls.length);
    this.#pending = agg.calls.length;
    this.#budget = agg.maxBodyBytes;
  }

  /**
   * Dispatches every call to its path (callPaths) (a call may settle at once, e.g. an open
   * breaker, and end the answer early). `signal`: the client's (none for a call in the background).
   */
  start(
    headers: Record<string, string>,
    paths: readonly string[],
    span: Span | null = null,
    signal?: Abortable,
  ): void {
    const calls = this.#agg.calls;
    if (signal !== undefined) {
      if (signal.aborted) {
        this.#sink.end({ code: upstreamErrorCode(signal.reason), sent: false });
        return;
      }
      this.#signal = signal;
      this.#onGone = () => this.#withdraw(signal.reason);
      signal.addEventListener('abort', this.#onGone, { once: true });
    }
    if (span !== null) this.#spans = [];
    for (let i = 0; i < calls.length && !this.#done; i++) {
      const c = calls[i];
      const parent = span === null ? null : startCallSpan(span, c.name);
      if (parent !== null) this.#spans![i] = parent;
      this.#timers[i] = setTimeout(timedOut, c.timeoutMs, this, i);
      const path = paths[i];
      const abort = new AbortController();
      this.#aborts[i] = abort;
      callUpstream(
        c.up,
        { path, method: 'GET', headers, body: null, keyed: false, signal: abort.signal, span: parent },
        new CallSink(this, i),
        this.#agg.metrics,
      );
    }
  }

  wants(index: number): boolean {
    return !this.#done && this.#outcomes[index] === undefined;
  }

  take(bytes: number): boolean {
    this.#budget -= bytes;
    return this.#budget >= 0;
  }

  settle(index: number, outcome: Outcome): void {
    if (!this.wants(index)) return;
    this.#outcomes[index] = outcome;
    clearTimeout(this.#timers[index]);
    this.#timers[index] = undefined;
    const call = this.#agg.calls[index];
    const result =
      'value' in outcome ? 'ok' : outcome.code === 'SLC_ERR_UPSTREAM_TIMEOUT' ? 'timeout' : 'error';
    this.#agg.callTime(this.#agg.routeId, call.name, result, this.#startNs);
    if (this.#spans?.[index] !== undefined) endCallSpan(this.#spans[index], result);
    this.#pending--;
    if (!('value' in outcome)) this.#aborts[index].abort();
    if (call.required && !('value' in outcome)) this.#answer(index);
    else if (this.#pending === 0) this.#answer(-1);
  }

  /** The client went away: every call still under way or queued is withdrawn, nothing is answered. */
  #withdraw(reason: unknown): void {
    if (this.#done) return;
    this.#stop();
    this.#sink.end({ code: upstreamErrorCode(reason), sent: true });
  }

  /** No call is wanted any more: timers cleared, the calls still under way or queued withdrawn. */
  #stop(): void {
    this.#done = true;
    if (this.#onGone !== null) this.#signal!.removeEventListener('abort', this.#onGone);
    const calls = this.#agg.calls;
    for (const t of this.#timers) if (t !== undefined) clearTimeout(t);
    for (let i = 0; i < calls.length; i++) {
      if (this.#outcomes[i] !== undefined) continue;
      this.#aborts[i]?.abort();
      if (this.#spans?.[i] !== undefined) endCallSpan(this.#spans[i], 'withdrawn');
    }
  }

  /** The answer: the merged object, or the problem of required call `failed` (-1: none failed). */
  #answer(failed: number): void {
    this.#stop();
    const calls = this.#agg.calls;
    const errors: ErrorEntry[] = [];
    const entry = (i: number): ErrorEntry | null => {
      const o = this.#outcomes[i];
      if (o === undefined || 'value' in o) return null;
      return {
        call: calls[i].name,
        code: o.code,
        title: ERRORS[o.code].title,
        ...(o.upstreamStatus !== undefined && { upstreamStatus: o.upstreamStatus }),
      };
    };
    if (failed >= 0) {
      const e = entry(failed)!;
      const code =
        e.code === 'SLC_ERR_UPSTREAM_TIMEOUT'
          ? 'SLC_ERR_AGGREGATE_CALL_TIMEOUT'
          : 'SLC_ERR_AGGREGATE_CALL_FAILED';
      const body = problem(code, `the required call "${e.call}" failed: ${e.title}`, {
        requestId: this.#requestId,
        call: e.call,
        errors: [e],
      });
      this.#deliver(ERRORS[code].status, 'application/problem+json', body);
      return;
    }
    const doc: Record<string, unknown> = {};
    for (let i = 0; i < calls.length; i++) {
      const o = this.#outcomes[i];
      doc[calls[i].name] = o !== undefined && 'value' in o ? o.value : null;
      const e = entry(i);
      if (e !== null) errors.push(e);
    }
    if (errors.length) doc[ERRORS_MEMBER] = errors;
    this.#deliver(200, 'application/json', doc);
  }

  #deliver(status: number, type: string, doc: unknown): void {
    deliverJson(this.#sink, status, type, doc);
  }
}

/** Each call's upstream path for this request, or null when a request value cannot stand in one (path-rewrite.ts). */
export function callPaths(agg: BoundAggregate, sources: Sources): string[] | null {
  const paths: string[] = [];
  for (const c of agg.calls) {
    const p = renderPath(c.path, sources);
    if (typeof p !== 'string') return null;
    paths.push(c.up.basePath + p);
  }
  return paths;
}

// Optimization: one function for every timer, the aggregation and call as its arguments (no closure per call).
function timedOut(self: Aggregation, index: number): void {
  self.settle(index, { code: 'SLC_ERR_UPSTREAM_TIMEOUT' });
}
