/**
 * Where one backend call's answer goes: kept in memory when it is a 2xx JSON answer within the
 * aggregate's byte budget, otherwise reported as that call's error. A body that is no longer
 * wanted (the call timed out, the aggregate answered, the budget ran out) is refused at its next
 * chunk, which makes undici abort the request rather than read it to the end.
 */
import { Writable } from 'node:stream';
import type { ErrorCode } from '../../errors/codes.ts';
import type { CallFailure, ResponseSink } from '../../upstream/call.ts';

/** What a call came to. */
export type Outcome = { value: unknown } | { code: ErrorCode; upstreamStatus?: number };

/** The aggregate as one call's sink sees it. */
export interface CallOwner {
  /** Whether call `index` still wants its answer. */
  wants(index: number): boolean;
  /** Takes `bytes` from the shared budget; false when it is exhausted. */
  take(bytes: number): boolean;
  settle(index: number, outcome: Outcome): void;
}

/** An error status's body is read and dropped (the connection stays reusable) up to this size. */
const DRAIN_BYTES = 64 * 1024;
const UNWANTED = new Error('aggregate: answer no longer wanted');
/** application/json, or any +json type (problem+json, vnd.x+json). */
const JSON_TYPE = /^application\/(?:[\w.!#$&^-]+\+)?json\s*(?:;|$)/i;

export class CallSink implements ResponseSink {
  readonly #owner: CallOwner;
  readonly #index: number;
  #chunks: Buffer[] | null = null;

  constructor(owner: CallOwner, index: number) {
    this.#owner = owner;
    this.#index = index;
  }

  response(status: number, headers: Record<string, string | string[]>): Writable {
    const owner = this.#owner;
    const i = this.#index;
    if (!owner.wants(i)) return refuse();
    if (status < 200 || status > 299) {
      owner.settle(i, { code: 'SLC_ERR_AGGREGATE_CALL_STATUS', upstreamStatus: status });
      return drain();
    }
    const type = headers['content-type'];
    const encoding = headers['content-encoding'];
    if (
      typeof type !== 'string' ||
      !JSON_TYPE.test(type) ||
      (encoding !== undefined && encoding !== 'identity')
    ) {
      owner.settle(i, { code: 'SLC_ERR_AGGREGATE_NOT_JSON', upstreamStatus: status });
      return drain();
    }
    const chunks: Buffer[] = [];
    this.#chunks = chunks;
    return new Writable({
      write(chunk: Buffer, _encoding, callback) {
        if (!owner.wants(i)) return callback(UNWANTED);
        if (!owner.take(chunk.length)) {
          owner.settle(i, { code: 'SLC_ERR_AGGREGATE_TOO_LARGE' });
          return callback(UNWANTED);
        }
        chunks.push(chunk);
        callback();
      },
    });
  }

  end(failure: CallFailure | null): void {
    const owner = this.#owner;
    const i = this.#index;
    if (!owner.wants(i)) return;
    if (failure !== null) {
      owner.settle(i, { code: failure.code });
      return;
    }
    try {
      owner.settle(i, { value: JSON.parse(Buffer.concat(this.#chunks ?? []).toString('utf8')) });
    } catch {
      owner.settle(i, { code: 'SLC_ERR_AGGREGATE_NOT_JSON', upstreamStatus: 200 });
    }
  }
}

/** A body nobody reads any more: refused at its first chunk. */
function refuse(): Writable {
  return new Writable({
    write(_chunk, _encoding, callback) {
      callback(UNWANTED);
    },
  });
}

/** An error answer's body: dropped, a bounded amount of it. */
function drain(): Writable {
  let left = DRAIN_BYTES;
  return new Writable({
    write(chunk: Buffer, _encoding, callback) {
      left -= chunk.length;
      callback(left < 0 ? UNWANTED : null);
    },
  });
}
