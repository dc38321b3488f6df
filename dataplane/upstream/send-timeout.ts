/**
 * nginx's proxy_send_timeout for a streamed request body: each time the upstream stops taking
 * the body, it must take more of it within `ms`, else the try is cut (504).
 *
 * undici pauses the body stream when the connection's write buffer is full (client-h1's writer
 * on a false `write`, client-h2's pipe) and resumes it on 'drain', so the time the stream stays
 * paused is the time between two successive writes the upstream did not accept: nginx's
 * measure. A slow client is not counted (its body waits for data, it is not paused), which a
 * wall-clock bound on the body could not tell apart. A body read whole first (a Buffer: retries,
 * plugins that read it) goes in one write and is bounded by the response timeout only.
 */
import type { Readable } from 'node:stream';

export class SendWatch {
  readonly #body: Readable;
  readonly #ms: number;
  readonly #onTimeout: () => void;
  #timer: NodeJS.Timeout | null = null;

  constructor(body: Readable, ms: number, onTimeout: () => void) {
    this.#body = body;
    this.#ms = ms;
    this.#onTimeout = onTimeout;
    body.on('pause', this.#paused);
    body.on('resume', this.#resumed);
  }

  #paused = (): void => {
    if (this.#timer === null) this.#timer = setTimeout(this.#onTimeout, this.#ms);
  };

  #resumed = (): void => {
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
  };

  /** The body went whole, the upstream answered, or the try ended: nothing more to watch. */
  stop(): void {
    this.#resumed();
    this.#body.off('pause', this.#paused);
    this.#body.off('resume', this.#resumed);
  }
}
