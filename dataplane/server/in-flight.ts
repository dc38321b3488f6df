/**
 * The requests a process has in flight, shared by its listeners: the overload bound
 * (--max-in-flight, and with --adaptive-concurrency the adaptive limit below it) and draining.
 *
 * Overload: past the limit a request is shed at once, before routing (503 SLC_ERR_OVERLOADED
 * with Retry-After, no upstream touched): queueing without bound only turns overload into
 * latency for everyone (p99 grows with the queue) while a 503 lets a client or load balancer
 * retry elsewhere. A request is in flight from its arrival until its response closes (ended,
 * or the client gone), long streams (SSE, NDJSON) included: they hold an upstream connection
 * and memory like any request. WebSocket upgrades are not counted: a WebSocket lives for
 * minutes or hours and would hold a slot for all of it, starving requests; they have their own
 * bound (--max-websockets).
 *
 * Draining: a request that arrives is answered with Connection: close, and each one in flight
 * closes its connection once its response ended, so no HTTP/1.1 connection outlives its last
 * response.
 */
import type { ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import { AdaptiveLimit } from './adaptive-limit.ts';

export type ShedReason = 'max_in_flight' | 'adaptive';

export class InFlight {
  readonly max: number;
  /** null: --adaptive-concurrency is off. */
  readonly adaptive: AdaptiveLimit | null;
  #count = 0;
  #draining = false;
  #idle: (() => void) | null = null;
  /**
   * One listener for every request (its response is `this`): no closure per request.
   * Optimization: a count, not a Set of the responses: keying a Set by each response cost
   * 6-10 µs a request on the plain proxy path (an A/B of the same process under wrk, this
   * project's machine).
   */
  readonly #release: (this: ServerResponse) => void;

  constructor(max: number, adaptive: boolean) {
    this.max = max;
    this.adaptive = adaptive ? new AdaptiveLimit(max, () => performance.now()) : null;
    const self = this;
    this.#release = function (this: ServerResponse) {
      self.#count--;
      if (self.#draining) self.#drained(this);
    };
  }

  get count(): number {
    return this.#count;
  }

  /** Admits a request (until its response closes), or says why it is shed. */
  admit(res: ServerResponse): ShedReason | null {
    const n = this.#count;
    if (n >= this.max) return 'max_in_flight';
    const adaptive = this.adaptive;
    if (adaptive !== null && n >= adaptive.limit) return 'adaptive';
    this.#count = n + 1;
    // A request arriving while draining (on a kept-alive connection) is served with Connection: close.
    if (this.#draining) res.shouldKeepAlive = false;
    // `on`, not `once` (no wrapper to allocate): a response emits 'close' once.
    if (adaptive === null) res.on('close', this.#release);
    else {
      const start = performance.now();
      const release = this.#release;
      res.on('close', function (this: ServerResponse) {
        release.call(this);
        // Refusals (a 404 scan, 401s, 429s) answer in microseconds: counted, they would pull the
        // floor down and make every real request look queued.
        if (this.statusCode < 400) adaptive.sample(performance.now() - start, n + 1);
      });
    }
    return null;
  }

  /** Draining starts: resolves once no request is in flight (each one's connection closing after it). */
  drain(): Promise<void> {
    this.#draining = true;
    if (this.#count === 0) return Promise.resolve();
    return new Promise((resolve) => {
      this.#idle = resolve;
    });
  }

  /**
   * A response ended while draining: its HTTP/1.1 connection, kept alive for a next request, is
   * ended (what was written is flushed first), so it does not hold the process until the
   * keep-alive timeout. (node:http2's compatibility response: its session's GOAWAY does this,
   * secure-server.ts.)
   */
  #drained(res: ServerResponse): void {
    if (!('stream' in res)) {
      // null once node:http has let go of the socket (the connection closed first).
      const socket = res.req?.socket as (Socket & { _httpMessage?: unknown }) | null | undefined;
      // A pipelined request's response already holds the socket (node:http hands it over before
      // this 'close'): that one ends the connection when it closes.
      if (socket != null && !socket.destroyed && socket._httpMessage == null) socket.end();
    }
    if (this.#count === 0) this.#idle?.();
  }
}
