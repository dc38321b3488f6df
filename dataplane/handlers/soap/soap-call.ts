/**
 * One SOAP call's answer, between upstream/call.ts and the route's ResponseSink: the response
 * body read into memory up to the route's byte bound (past it the body is refused at its next
 * chunk, which makes undici abort the request), then translated (response.ts) and delivered as
 * JSON or as a problem. A failed call (time-out, open breaker, no connection) passes on as the
 * gateway's usual problem.
 */
import { Writable } from 'node:stream';
import type { ErrorCode } from '../../errors/codes.ts';
import type { SoapResult } from './metrics.ts';
import { problem } from '../../errors/problem.ts';
import type { CallFailure, ResponseSink } from '../../upstream/call.ts';
import { deliverJson } from '../deliver.ts';
import type { SoapReader } from './response.ts';

const TOO_LARGE = new Error('soap: response larger than allowed');
/** application/soap+xml, text/xml, application/xml or any +xml type. */
const XML_TYPE = /^(?:text\/xml|application\/(?:[\w.!#$&^-]+\+)?xml)\s*(?:;|$)/i;

/** What the route gives each of its calls, bound once. */
export interface BoundSoap {
  routeId: string;
  reader: SoapReader;
  maxResponseBytes: number;
  /** Counts how a request ended (metrics.ts). */
  result: (route: string, result: SoapResult) => void;
}

export class SoapCall implements ResponseSink {
  readonly #out: ResponseSink;
  readonly #soap: BoundSoap;
  readonly #requestId: string;
  #status = 0;
  #notXml = false;
  #chunks: Buffer[] = [];
  #length = 0;
  #tooLarge = false;

  constructor(out: ResponseSink, soap: BoundSoap, requestId: string) {
    this.#out = out;
    this.#soap = soap;
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
        if (this.#length > this.#soap.maxResponseBytes) {
          this.#tooLarge = true;
          return callback(TOO_LARGE);
        }
        this.#chunks.push(chunk);
        callback();
      },
    });
  }

  end(failure: CallFailure | null): void {
    const soap = this.#soap;
    if (this.#tooLarge)
      this.#problem(
        'SLC_ERR_SOAP_TOO_LARGE',
        `the SOAP response is larger than ${soap.maxResponseBytes} bytes`,
        undefined,
      );
    else if (failure !== null) {
      soap.result(soap.routeId, 'error');
      this.#out.end(failure);
    } else if (this.#length === 0 && this.#status >= 200 && this.#status < 300) {
      // A one-way operation's answer (often 202): nothing to translate.
      soap.result(soap.routeId, 'ok');
      deliverJson(this.#out, 200, 'application/json', {});
    } else if (this.#notXml)
      this.#problem(
        'SLC_ERR_SOAP_BAD_RESPONSE',
        `the upstream answered ${this.#status} without XML`,
        undefined,
      );
    else {
      const answer = soap.reader.read(this.#status, Buffer.concat(this.#chunks, this.#length));
      this.#chunks = [];
      if ('doc' in answer) {
        soap.result(soap.routeId, 'ok');
        deliverJson(this.#out, 200, 'application/json', answer.doc);
      } else this.#problem(answer.code, answer.detail, answer.extra);
    }
  }

  #problem(code: ErrorCode, detail: string, extra: Record<string, string> | undefined): void {
    const soap = this.#soap;
    soap.result(soap.routeId, RESULTS[code] ?? 'refused');
    const body = problem(code, detail, { requestId: this.#requestId, ...extra });
    deliverJson(this.#out, body.status, 'application/problem+json', body);
  }
}

const RESULTS: Partial<Record<ErrorCode, SoapResult>> = {
  SLC_ERR_SOAP_CLIENT_FAULT: 'client_fault',
  SLC_ERR_SOAP_SERVER_FAULT: 'server_fault',
};
