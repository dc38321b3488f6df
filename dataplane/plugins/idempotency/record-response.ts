/**
 * The response of a first execution, recorded on its way to the client. Chunks pass through as
 * they come (nothing waits for the whole body) and are kept up to the cap. The record is
 * stored before the client has its whole response, so a client that has its answer and retries,
 * through any replica, finds COMPLETED: the response's end waits for the store, and so do the
 * bytes that complete a declared Content-Length (with them the client has its answer, whether the
 * end has come or not). If the client goes away, the upstream response is still read to its end
 * and stored: the retry that follows gets it.
 */
import { Writable } from 'node:stream';
import type { ResponseTap } from '../../pipeline/context.ts';
import { afterDrain } from '../../pipeline/drain.ts';
import { endWithLast } from '../../upstream/one-write.ts';
import type { Execution } from './execution.ts';
import { storedHeaders } from './replay.ts';

export class RecordResponse implements ResponseTap {
  readonly #execution: Execution;
  readonly #maxBytes: number;

  constructor(execution: Execution, maxBytes: number) {
    this.#execution = execution;
    this.#maxBytes = maxBytes;
  }

  start(status: number, headers: Record<string, string | string[]>, res: Writable): Writable {
    return new Recording(this.#execution, this.#maxBytes, status, headers, res);
  }

  fail(sent: boolean): void {
    this.#execution.fail(sent);
  }
}

/**
 * Optimization: a Writable subclass (methods on the prototype, state in fields) rather than a
 * Writable built from options, which took five closures per request.
 */
class Recording extends Writable {
  readonly #execution: Execution;
  readonly #max: number;
  readonly #status: number;
  readonly #headers: Record<string, string | string[]>;
  readonly #res: Writable;
  #chunks: Buffer[] = [];
  #size = 0;
  #omitted = false;
  /** The Content-Length the response declares (NaN: none, chunked). */
  readonly #declared: number;
  /** The chunk that completes the declared length: written with the end, once the record is stored. */
  #last: Buffer | null = null;

  constructor(
    execution: Execution,
    max: number,
    status: number,
    headers: Record<string, string | string[]>,
    res: Writable,
  ) {
    super();
    this.#execution = execution;
    this.#max = max;
    this.#status = status;
    this.#headers = headers;
    this.#res = res;
    const length = headers['content-length'];
    this.#declared = typeof length === 'string' ? Number(length) : Number.NaN;
  }

  #clientGone(): boolean {
    return this.#res.destroyed || this.#res.writableEnded;
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    this.#size += chunk.length;
    if (this.#size <= this.#max) this.#chunks.push(chunk);
    else if (!this.#omitted) {
      this.#omitted = true;
      this.#chunks = [];
    }
    if (this.#size === this.#declared) {
      this.#last = chunk;
      callback();
    } else if (this.#clientGone() || this.#res.write(chunk)) callback();
    // Wait for the client to drain, or to go away (then keep reading for the record).
    else afterDrain(this.#res, callback);
  }

  override _final(callback: (error?: Error | null) => void): void {
    const chunks = this.#chunks;
    // One chunk (a small response) is kept as it came: no copy.
    const body = this.#omitted
      ? Buffer.alloc(0)
      : chunks.length === 1
        ? chunks[0]
        : Buffer.concat(chunks, this.#size);
    const done = () => {
      // The last chunk in one write with the head (one-write.ts), as a replay's.
      if (!this.#clientGone()) this.#last === null ? this.#res.end() : endWithLast(this.#res, this.#last);
      callback();
    };
    // complete() does not reject (a store failure is retried in the background); either way the client's response ends.
    this.#execution
      .complete({
        status: this.#status,
        headers: storedHeaders(this.#headers),
        body,
        bodyOmitted: this.#omitted,
      })
      .then(done, done);
  }

  override _destroy(err: Error | null, callback: (error?: Error | null) => void): void {
    if (err && !this.#res.writableEnded) this.#res.destroy();
    callback(err);
  }
}
