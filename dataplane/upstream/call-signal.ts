/**
 * The signal an upstream call is withdrawn by (UpstreamRequest.signal): the client gone
 * (RequestContext.signal), an aggregate call past its time. It has the shape of the AbortSignal
 * API that the calls and undici use (`aborted`, `reason`, add/removeEventListener('abort')), so
 * either can be given.
 *
 * Optimization: not an AbortController per request. Node's AbortSignal is an EventTarget, and
 * making one cost ~9 µs on this project's machine (a micro-benchmark: AbortController 9.0 µs,
 * with a listener added and removed 12.2 µs; an EventEmitter with a listener 0.4 µs), which on
 * the plain proxy path was most of a 25 µs/request regression (bench/run.ts). This is a flag,
 * a reason and at most a few listeners.
 */
export interface CallSignal {
  readonly aborted: boolean;
  readonly reason: unknown;
  addEventListener(type: 'abort', listener: () => void, options?: { once?: boolean }): void;
  removeEventListener(type: 'abort', listener: () => void): void;
}

export class Withdrawal implements CallSignal {
  aborted = false;
  reason: unknown = undefined;
  /** One listener (the usual case: the call's try), or several. */
  #listeners: (() => void) | (() => void)[] | null = null;

  // Every listener runs once: `once` is how they are all registered.
  addEventListener(_type: 'abort', listener: () => void): void {
    const l = this.#listeners;
    if (l === null) this.#listeners = listener;
    else if (typeof l === 'function') this.#listeners = [l, listener];
    else l.push(listener);
  }

  removeEventListener(_type: 'abort', listener: () => void): void {
    const l = this.#listeners;
    if (l === listener) this.#listeners = null;
    else if (Array.isArray(l)) {
      const i = l.indexOf(listener);
      if (i >= 0) l.splice(i, 1);
    }
  }

  abort(reason: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    const l = this.#listeners;
    this.#listeners = null;
    if (typeof l === 'function') l();
    else if (l !== null) for (const f of l) f();
  }
}
