/**
 * A request's abort signal: aborted when its client goes away before the response ended (an
 * HTTP/1.1 socket closed, an h2 stream reset, its session gone), so that every upstream call
 * made for the client stops at once, whether its response has started or not, and frees its
 * upstream connection. One 'close' listener on the response sees every way: node:http emits it
 * when the socket closes, node:http2's compatibility response when its stream closes. Whether
 * the response had ended tells a normal close from a cancel: a reset h2 stream's compatibility
 * response reads as *finished* (writableFinished) but never as *ended* (writableEnded).
 *
 * Optimization: not an AbortController. Every proxied request makes one and every upstream try
 * adds and removes a listener: with an AbortController (an EventTarget) that was 238 ns a
 * request in a loop, here 37 ns; under load (bench/profile.ts) EventTarget's removeEventListener
 * alone was 0.4–0.7 µs of a plain GET's or POST's ~50–70. What reads it needs only `aborted`,
 * `reason` and one listener at a time (upstream/abortable.ts, which an AbortSignal also is); a
 * library that wants a real AbortSignal gets one made for it (asAbortSignal).
 */
import type { ServerResponse } from 'node:http';
import type { Abortable, AbortListener } from '../upstream/abortable.ts';
import { CLIENT_CLOSED } from '../upstream/errors.ts';

export class ClientSignal implements Abortable {
  aborted = false;
  reason: unknown = undefined;
  #listeners: AbortListener[] | null = null;
  #real: AbortController | null = null;

  constructor(res: ServerResponse) {
    if (isClosed(res)) {
      if (!res.writableEnded) this.#abort();
    }
    // `on`, not `once` (no wrapper to allocate): a response emits 'close' once.
    else
      res.on('close', () => {
        if (!res.writableEnded) this.#abort();
      });
  }

  addEventListener(_type: 'abort', listener: AbortListener, _options?: { once?: boolean }): void {
    if (this.aborted) return; // as an EventTarget: an event past is not dispatched again
    if (this.#listeners === null) this.#listeners = [listener];
    else this.#listeners.push(listener);
  }

  removeEventListener(_type: 'abort', listener: AbortListener): void {
    const list = this.#listeners;
    if (list === null) return;
    const i = list.indexOf(listener);
    if (i >= 0) list.splice(i, 1);
  }

  /** An AbortSignal that aborts with this one, for a library that takes no other (undici's upgrade, AbortSignal.any). */
  asAbortSignal(): AbortSignal {
    if (this.#real === null) {
      const real = new AbortController();
      this.#real = real;
      if (this.aborted) real.abort(this.reason);
      else this.addEventListener('abort', () => real.abort(this.reason));
    }
    return this.#real.signal;
  }

  #abort(): void {
    this.aborted = true;
    this.reason = CLIENT_CLOSED;
    const list = this.#listeners;
    this.#listeners = null;
    if (list !== null)
      for (const listener of list) {
        if (typeof listener === 'function') listener();
        else listener.handleEvent();
      }
  }
}

/** Closed already (the client left while a plugin waited): no 'close' is to come. */
function isClosed(res: ServerResponse): boolean {
  if (res.destroyed) return true;
  // node:http2's compatibility response has no `destroyed`: its stream tells.
  return (res as unknown as { stream?: { destroyed: boolean } }).stream?.destroyed === true;
}
