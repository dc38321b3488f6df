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
 * Draining: responses not yet started are marked Connection: close, those already streaming
 * close their connection once ended, so no HTTP/1.1 connection outlives its last response.
 */
import type { ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import { AdaptiveLimit } from './adaptive-limit.ts';

export type ShedReason = 'max_in_flight' | 'adaptive';

export class InFlight {
  readonly max: number;
  /** null: --adaptive-concurrency is off. */
  readonly adaptive: AdaptiveLimit | null;
  readonly #requests = new Set<ServerResponse>();
  /** One listener for every request (its response is `this`): no closure per request. */
  readonly #release: (this: ServerResponse) => void;
  #draining = false;
  #idle: (() => void) | null = null;

  constructor(max: number, adaptive: boolean) {
    this.max = max;
    this.adaptive = adaptive ? new AdaptiveLimit(max, () => performance.now()) : null;
    const requests = this.#requests;
    const self = this;
    this.#release = function (this: ServerResponse) {
      requests.delete(this);
      if (requests.size === 0) self.#idle?.();
    };
  }

  get count(): number {
    return this.#requests.size;
  }

  /** Admits a request (until its response closes), or says why it is shed. */
  admit(res: ServerResponse): ShedReason | null {
    const n = this.#requests.size;
    if (n >= this.max) return 'max_in_flight';
    const adaptive = this.adaptive;
    if (adaptive !== null && n >= adaptive.limit) return 'adaptive';
    this.#requests.add(res);
    if (this.#draining) res.shouldKeepAlive = false;
    if (adaptive === null) res.once('close', this.#release);
    else {
      const start = performance.now();
      const release = this.#release;
      res.once('close', function (this: ServerResponse) {
        release.call(this);
        adaptive.sample(performance.now() - start, n + 1);
      });
    }
    return null;
  }

  /** Draining starts: HTTP/1.1 responses in flight close their connection; resolves when none is left. */
  drain(): Promise<void> {
    this.#draining = true;
    for (const res of this.#requests) {
      // node:http2's compatibility response: its session's GOAWAY does this (secure-server.ts).
      if ('stream' in res) continue;
      if (!res.headersSent) res.shouldKeepAlive = false;
      else {
        const socket = res.socket;
        if (socket) res.once('finish', () => socket.end());
      }
    }
    if (this.#requests.size === 0) return Promise.resolve();
    return new Promise((resolve) => {
      this.#idle = resolve;
    });
  }
}
