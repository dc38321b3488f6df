/**
 * The response of a first execution, recorded on its way to the client. Chunks pass through as
 * they come (nothing waits for the whole body) and are kept up to the cap. The record is
 * stored before the client's response ends, so a client that has its answer and retries finds
 * COMPLETED. If the client goes away, the upstream response is still read to its end and
 * stored: the retry that follows gets it.
 */
import { Writable } from 'node:stream';
import type { ResponseTap } from '../../pipeline/context.ts';
import { afterDrain } from '../../pipeline/drain.ts';
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
    const execution = this.#execution;
    const max = this.#maxBytes;
    const chunks: Buffer[] = [];
    let size = 0;
    let omitted = false;
    const clientGone = () => res.destroyed || res.writableEnded;
    return new Writable({
      write(chunk: Buffer, _encoding, callback) {
        size += chunk.length;
        if (size <= max) chunks.push(chunk);
        else if (!omitted) {
          omitted = true;
          chunks.length = 0;
        }
        if (clientGone() || res.write(chunk)) return callback();
        // Wait for the client to drain, or to go away (then keep reading for the record).
        afterDrain(res, callback);
      },
      final(callback) {
        execution
          .complete({
            status,
            headers: storedHeaders(headers),
            body: omitted ? Buffer.alloc(0) : Buffer.concat(chunks, size),
            bodyOmitted: omitted,
          })
          .finally(() => {
            if (!clientGone()) res.end();
            callback();
          });
      },
      destroy(err, callback) {
        if (err && !res.writableEnded) res.destroy();
        callback(err);
      },
    });
  }

  fail(sent: boolean): void {
    this.#execution.fail(sent);
  }
}
