/**
 * One try of an upstream call, as undici's dispatch handler: the response's head goes to the
 * call's sink (or, for a status to retry, nowhere), its body to the Writable the sink returns,
 * with backpressure, and the try's end (the body delivered whole, or the error that ended it)
 * to `settled` once, its trailers (if any) to `trailers` just before the body's end. Its
 * timeouts are deadlines.ts's.
 *
 * Optimization: this replaces undici's `Pool.stream`, whose StreamHandler is an AsyncResource
 * and made per request a factory argument, a callback argument, an abort closure and five
 * closures with three listeners to follow the Writable's end: this handler is one object with
 * one listener on the Writable ('close', which a Writable and a ServerResponse emit after
 * 'finish' or an error), and a 'drain' listener only when the client is slow.
 */
import { type IncomingHttpHeaders, ServerResponse } from 'node:http';
import type { Writable } from 'node:stream';
import { type Dispatcher, errors } from 'undici';
import { endWithLast, ONE_WRITE_BYTES } from './one-write.ts';
import type { Abortable } from './abortable.ts';
import { arm, disarm, Expiring, touch } from './deadlines.ts';

const noop = () => {};

export abstract class UpstreamTry extends Expiring implements Dispatcher.DispatchHandler {
  readonly #headersTimeoutMs: number;
  readonly #bodyTimeoutMs: number;
  #controller: Dispatcher.DispatchController | null = null;
  /** Where the body goes once the head came; null before it, or while the body is dropped. */
  #out: Writable | null = null;
  #responded = false;
  #settled = false;
  #onDrain: (() => void) | null = null;
  /**
   * The body's length when all of it can leave with the client's head in one write (a client's
   * HTTP/1.1 response, a Content-Length up to ONE_WRITE_BYTES), else -1; and that body, held
   * from its one chunk to the end, which the parser gives right after it.
   */
  #whole = -1;
  #held: Buffer | null = null;
  /** The caller's signal (the client gone, an aggregate call withdrawn); whether this try listens to it. */
  readonly #signal: Abortable | undefined;
  #listening = false;

  constructor(headersTimeoutMs: number, bodyTimeoutMs: number, signal: Abortable | undefined) {
    super();
    this.#headersTimeoutMs = headersTimeoutMs;
    this.#bodyTimeoutMs = bodyTimeoutMs;
    this.#signal = signal;
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.#controller = controller;
    // As undici counts it: from the request's start on a connection (not its wait in the pool).
    arm(this, this.#headersTimeoutMs);
    const signal = this.#signal;
    if (signal !== undefined) {
      if (signal.aborted) {
        controller.abort(signal.reason as Error);
        return;
      }
      // Removed when the try settles; an abort comes once (no `once` option object to allocate).
      signal.addEventListener('abort', this);
      this.#listening = true;
    }
  }

  /**
   * The signal's listener (as a DOM EventListener object): the caller is gone, the try is cut.
   * Optimization, measured: the try listens as itself rather than through a closure made per
   * try. With the closure, the start of each load under wrk (bench/README.md, "A GC regime at
   * the start of each load") had 25–27 scavenges promoting over 1 MB each over three 3 s GET
   * runs; with the try itself, 6–7 (the floor: 2). Why a closure does that was not found.
   */
  handleEvent(): void {
    this.#controller?.abort(this.#signal!.reason as Error);
  }

  onResponseStart(
    controller: Dispatcher.DispatchController,
    statusCode: number,
    headers: IncomingHttpHeaders,
  ): void {
    if (statusCode < 200 || this.#settled) return;
    this.#responded = true;
    arm(this, this.#bodyTimeoutMs);
    const out = this.head(statusCode, headers);
    if (out === null) return;
    this.#out = out;
    // Optimization: a small body that comes in one chunk (most API responses) is written with the
    // end, which sends head and body in one write() of one string instead of a writev() of the
    // head, the body and the end's empty chunk (one-write.ts; bench/README.md, "A proxied
    // response in one write").
    this.#whole = out instanceof ServerResponse ? wholeLength(headers['content-length']) : -1;
    // One listener sees the Writable's end: 'close' follows 'finish', an error and a destroy alike.
    out.on('close', () => this.#closed(out));
    // An 'error' is reported by the 'close' after it: this only keeps it from being unhandled.
    out.on('error', noop);
    // Closed already (the client went away while the upstream answered): no 'close' is to come.
    // (node:http2's compatibility response has no `closed`: a reset stream reads as finished.)
    if (out.closed || out.writableFinished) queueMicrotask(() => this.#closed(out));
    else if (out.writableNeedDrain) this.#pauseUntilDrain(controller, out);
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    touch(this, this.#bodyTimeoutMs);
    const out = this.#out;
    if (out === null) return;
    if (chunk.length === this.#whole) {
      this.#held = chunk;
      return;
    }
    this.#whole = -1;
    // (More bytes than an HTTP/2 upstream declared: what was held goes first.)
    if (this.#held !== null) {
      out.write(this.#held);
      this.#held = null;
    }
    if (!out.write(chunk)) this.#pauseUntilDrain(controller, out);
  }

  onResponseEnd(_controller: Dispatcher.DispatchController, trailers?: IncomingHttpHeaders): void {
    disarm(this);
    const out = this.#out;
    // The Writable's 'close' settles the try once the body is through.
    if (out !== null) {
      // Before the end, which is what sends them (HTTP/2: gRPC's status).
      if (trailers !== undefined && hasAny(trailers)) this.trailers(trailers);
      const held = this.#held;
      if (held === null) out.end();
      else {
        this.#held = null;
        endWithLast(out, held);
      }
    } else this.#settle(null);
  }

  onResponseError(_controller: Dispatcher.DispatchController | null, err: Error): void {
    disarm(this);
    this.#held = null;
    const out = this.#out;
    if (out !== null) {
      this.#out = null;
      // Its 'close' would come later and without the cause: the try ends with this error.
      this.#settle(err);
      if (!out.destroyed) out.destroy(err);
      return;
    }
    this.#settle(err);
  }

  /** Armed only once started: the controller is there. */
  expire(): void {
    this.#controller!.abort(
      this.#responded ? new errors.BodyTimeoutError() : new errors.HeadersTimeoutError(),
    );
  }

  #pauseUntilDrain(controller: Dispatcher.DispatchController, out: Writable): void {
    controller.pause();
    if (this.#onDrain === null) {
      this.#onDrain = () => controller.resume();
      out.on('drain', this.#onDrain);
    }
  }

  /**
   * The Writable closed: the body went through whole, or the client went away (the upstream is
   * cut, which also ends a wait for 'drain'). Whole means ended *and* finished: node:http2's
   * compatibility response of a stream the client reset reads as finished without being ended.
   */
  #closed(out: Writable): void {
    if (this.#out !== out) return;
    this.#out = null;
    const err =
      out.errored ??
      (out.writableEnded && out.writableFinished
        ? null
        : this.#signal?.aborted
          ? (this.#signal.reason as Error)
          : prematureClose());
    this.#settle(err);
    if (err !== null) {
      disarm(this);
      this.#controller?.abort(err);
    }
  }

  #settle(err: Error | null): void {
    if (this.#settled) return;
    this.#settled = true;
    if (this.#listening) this.#signal!.removeEventListener('abort', this);
    this.settled(err, this.#responded);
  }

  /**
   * The response's head (no retry follows). Returns where its body goes, or null to drop it
   * (a status to retry: the try ends when the body is read).
   */
  protected abstract head(status: number, headers: IncomingHttpHeaders): Writable | null;

  /** The response's trailers (any; an HTTP/2 upstream's carry gRPC's status), before its body's end. */
  protected abstract trailers(trailers: IncomingHttpHeaders): void;

  /** The try is over, once: err null when the body reached its Writable whole (or was dropped whole). */
  protected abstract settled(err: Error | null, responded: boolean): void;
}

/** A Content-Length whose body may be held for one write (one-write.ts), else -1. */
function wholeLength(value: string | string[] | undefined): number {
  if (typeof value !== 'string') return -1;
  const n = Number(value);
  return n > 0 && n <= ONE_WRITE_BYTES ? n : -1;
}

/** Whether an object has an own enumerable key (undici hands every response a trailers object, mostly empty). */
function hasAny(o: object): boolean {
  for (const _ in o) return true;
  return false;
}

function prematureClose(): Error {
  return Object.assign(new Error('Premature close'), { code: 'ERR_STREAM_PREMATURE_CLOSE' });
}
