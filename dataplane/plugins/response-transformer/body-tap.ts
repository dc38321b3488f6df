/**
 * The response body, transformed on its way to the client: a JSON body is buffered (up to the
 * limit), its fields edited, and sent with its new Content-Length. The head waits for it
 * (rewritesBody). Bodies that are compressed, not JSON, larger than the limit (by Content-Length,
 * or growing past it when there is none) or not a JSON object pass untouched, counted by reason;
 * a body that outgrows the limit is flushed as it came and streams on.
 */
import { Writable } from 'node:stream';
import type { Sources } from '../../config/template.ts';
import type { ResponseTap } from '../../pipeline/context.ts';
import { afterDrain } from '../../pipeline/drain.ts';
import {
  applyFieldVerbs,
  type FieldVerbs,
  isJsonType,
  parseObject,
  type SkipReason,
} from '../../pipeline/transform/json-fields.ts';

/** Passes a chunk on, waiting for the next stream to drain (or to go away). */
function pass(next: Writable, chunk: Buffer, callback: () => void): void {
  if (next.destroyed || next.write(chunk)) {
    callback();
    return;
  }
  afterDrain(next, callback);
}

export class BodyTransform implements ResponseTap {
  readonly rewritesBody = true;
  readonly #verbs: FieldVerbs;
  readonly #sources: Sources;
  readonly #max: number;
  readonly #skipped: (reason: SkipReason) => void;

  constructor(verbs: FieldVerbs, sources: Sources, max: number, skipped: (reason: SkipReason) => void) {
    this.#verbs = verbs;
    this.#sources = sources;
    this.#max = max;
    this.#skipped = skipped;
  }

  start(status: number, headers: Record<string, string | string[]>, next: Writable): Writable {
    if (status === 204 || status === 304) return next;
    const encoding = headers['content-encoding'];
    if (encoding !== undefined && encoding !== 'identity') return this.#untouched('encoded', next);
    if (!isJsonType(headers['content-type'])) return this.#untouched('not_json', next);
    const length = headers['content-length'];
    if (typeof length === 'string' && Number(length) > this.#max) return this.#untouched('too_large', next);

    const max = this.#max;
    const chunks: Buffer[] = [];
    let size = 0;
    let streaming = false;
    const tap = this;
    return new Writable({
      write(chunk: Buffer, _encoding, callback) {
        if (streaming) return pass(next, chunk, callback);
        size += chunk.length;
        chunks.push(chunk);
        if (size <= max) return callback();
        // Past the limit: what was held goes as it came, and the rest streams.
        streaming = true;
        tap.#skipped('too_large');
        pass(next, Buffer.concat(chunks, size), callback);
        chunks.length = 0;
      },
      final(callback) {
        if (!streaming) {
          const held = Buffer.concat(chunks, size);
          const body = tap.#transform(held);
          headers['content-length'] = String(body.length);
          // Other bytes than the upstream's: its strong validator no longer names them. Weak, it
          // still does (the same upstream representation always transforms the same), and
          // conditional requests forwarded with it compare weakly upstream (RFC 9110 §8.8.3.2).
          const etag = headers.etag;
          if (body !== held && typeof etag === 'string' && !etag.startsWith('W/')) headers.etag = `W/${etag}`;
          next.end(body);
        } else next.end();
        callback();
      },
      destroy(err, callback) {
        // Still buffering: nothing reached the client, whose sink answers with a problem.
        if (err && streaming && !next.writableEnded) next.destroy(err);
        callback(err);
      },
    });
  }

  fail(): void {}

  #untouched(reason: SkipReason, next: Writable): Writable {
    this.#skipped(reason);
    return next;
  }

  /** The edited body, or the body as it came (counted) when it is not a JSON object. */
  #transform(body: Buffer): Buffer {
    const parsed = parseObject(body);
    if (typeof parsed === 'string') {
      this.#skipped(parsed);
      return body;
    }
    applyFieldVerbs(this.#verbs, parsed, this.#sources);
    return Buffer.from(JSON.stringify(parsed));
  }
}
