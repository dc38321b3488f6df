/**
 * One SOAP call's answer, between upstream/call.ts and the route's ResponseSink: the response
 * body read into memory up to the route's byte bound (past it the body is refused at its next
 * chunk, which makes undici abort the request), then translated (response.ts) and delivered as
 * JSON or as a problem. A failed call (time-out, open breaker, no connection) passes on as the
 * gateway's usual problem.
 */
import { Writable } from 'node:stream';
import type { ErrorCode } from '../../errors/codes.ts';
import { problem } from '../../errors/problem.ts';
import type { CallFailure, ResponseSink } from '../../upstream/call.ts';
import { deliverJson } from '../deliver.ts';
import type { SoapReader } from './response.ts';

const TOO_LARGE = new Error('soap: response larger than allowed');
/** application/soap+xml, text/xml, application/xml or any +xml type. */
const XML_TYPE = /^(?:text\/xml|application\/(?:[\w.!#$&^-]+\+)?xml)\s*(?:;|$)/i;

export class SoapCall implements ResponseSink {
  readonly #out: ResponseSink;
  readonly #reader: SoapReader;
  readonly #maxBytes: number;
  readonly #requestId: string;
  #status = 0;
  #notXml = false;
  #chunks: Buffer[] = [];
  #length = 0;
  #tooLarge = false;

  constructor(out: ResponseSink, reader: SoapReader, maxBytes: number, requestId: string) {
    this.#out = out;
    this.#reader = reader;
    this.#maxBytes = maxBytes;
    this.#requestId = requestId;
  }

  response(status: number, headers: Record<string, string | string[]>): Writable {
    this.#status = status;
    const type = headers['content-type'];
    const encoding = headers['content-encoding'];
    this.#notXml =
      typeof type !== 'string' || !XML_TYPE.test(type) || (encoding !== undefined && encoding !== 'identity');
    return new Writable({
      write: (chunk: Buffer, _encoding, callback) => {
        this.#length += chunk.length;
        if (this.#length > this.#maxBytes) {
          this.#tooLarge = true;
          return callback(TOO_LARGE);
        }
        this.#chunks.push(chunk);
        callback();
      },
    });
  }

  end(failure: CallFailure | null): void {
    if (this.#tooLarge)
      this.#problem('SLC_ERR_SOAP_TOO_LARGE', `the SOAP response is larger than ${this.#maxBytes} bytes`);
    else if (failure !== null) this.#out.end(failure);
    else if (this.#notXml)
      this.#problem('SLC_ERR_SOAP_BAD_RESPONSE', `the upstream answered ${this.#status} without XML`);
    else {
      const answer = this.#reader.read(this.#status, Buffer.concat(this.#chunks, this.#length));
      this.#chunks = [];
      if ('doc' in answer) deliverJson(this.#out, 200, 'application/json', answer.doc);
      else this.#problem(answer.code, answer.detail, answer.extra);
    }
  }

  #problem(code: ErrorCode, detail: string, extra?: Record<string, string>): void {
    const body = problem(code, detail, { requestId: this.#requestId, ...extra });
    deliverJson(this.#out, body.status, 'application/problem+json', body);
  }
}
