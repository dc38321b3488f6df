/**
 * HTTP/1.1 keep-alive connections to one cleartext endpoint, with undici's dispatch interface
 * (the handler of upstream/try.ts is unchanged). TLS upstreams, h2c and WebSocket upgrades stay
 * on undici (endpoint.ts).
 *
 * Why not undici here: measured (bench/README.md, "An HTTP/1.1 client of our own"), undici's
 * client is ~40 % of the instructions of the bare node:http + undici floor per request: a
 * Request object per request whose every header is checked and lower-cased again, a WASM llhttp
 * with a JS callback per header field and value, and its pool's queue machinery. This one
 * writes the head in one string, checks each value once (the same rule, RFC 9110 §5.5), and
 * parses the response with Node's own llhttp (the C++ parser node:http uses, strict: duplicate
 * or conflicting Content-Length, bad chunk sizes and the like are errors, as in undici).
 */
import { type Socket, connect as netConnect } from 'node:net';
import type { IncomingHttpHeaders } from 'node:http';
import type { Readable } from 'node:stream';
import type { Dispatcher } from 'undici';

// Node's own HTTP parser (llhttp): not in Node's documented API, but the one its http client and
// server parse with, stable in shape across releases (lib/_http_common.js).
// biome-ignore lint/suspicious/noExplicitAny: an internal module without types
const { HTTPParser } = (process as any).getBuiltinModule('_http_common') as { HTTPParser: any };
const kOnHeaders: number = HTTPParser.kOnHeaders;
const kOnHeadersComplete: number = HTTPParser.kOnHeadersComplete;
const kOnBody: number = HTTPParser.kOnBody;
const kOnMessageComplete: number = HTTPParser.kOnMessageComplete;

/** RFC 9110 §5.5: a field value is visible characters, spaces and tabs (obs-text allowed). */
const INVALID_VALUE = /[^\t\x20-\x7e\x80-\xff]/;
/** A request target has no space, control character or character beyond one byte (as undici's check). */
const INVALID_PATH = /[^\u0021-\u00ff]/;

export interface H1Options {
  host: string;
  port: number;
  /** The Host header (the origin's host, whatever address is dialed). */
  hostHeader: string;
  connections: number;
  connectMs: number;
  keepAliveMs: number;
}

export type H1Request = {
  path: string;
  method: string;
  headers?: Record<string, string | string[] | undefined> | null;
  body?: Buffer | Readable | null;
};

interface Queued {
  req: H1Request;
  handler: Dispatcher.DispatchHandler;
}

function codeError(message: string, code: string): Error {
  return Object.assign(new Error(message), { code });
}

export class H1Pool {
  readonly #opts: H1Options;
  readonly #idle: Conn[] = [];
  readonly #queue: Queued[] = [];
  #open = 0;
  #busy = 0;
  #closed = false;
  #drained: (() => void) | null = null;
  #sweep: NodeJS.Timeout | null = null;

  constructor(opts: H1Options) {
    this.#opts = opts;
  }

  get options(): H1Options {
    return this.#opts;
  }

  get closed(): boolean {
    return this.#closed;
  }

  dispatch(req: H1Request, handler: Dispatcher.DispatchHandler): boolean {
    if (this.#closed) {
      const ex = new Exchange(req, handler, null);
      ex.fail(codeError('the pool is closed', 'UND_ERR_CLOSED'));
      return false;
    }
    let conn = this.#idle.pop();
    if (conn !== undefined) {
      const now = Date.now();
      // Past its idle time (the sweep comes at most a second late): never sent on.
      while (conn !== undefined && (conn.gone || conn.idleUntil <= now)) {
        conn.destroy();
        conn = this.#idle.pop();
      }
    }
    if (conn === undefined) {
      if (this.#open >= this.#opts.connections) {
        this.#queue.push({ req, handler });
        return false;
      }
      conn = new Conn(this);
      this.#open++;
    }
    this.#busy++;
    conn.run(req, handler);
    return true;
  }

  /** A connection finished its exchange and may be reused. */
  release(conn: Conn): void {
    this.#busy--;
    const next = this.#queue.shift();
    if (next !== undefined && !conn.gone) {
      this.#busy++;
      conn.run(next.req, next.handler);
      return;
    }
    if (this.#closed) {
      conn.destroy();
      return;
    }
    if (!conn.idle(this.#opts.keepAliveMs)) return;
    this.#idle.push(conn);
    if (this.#sweep === null) this.#sweep = setTimeout(this.#sweepIdle, 1_000).unref();
  }

  /**
   * Closes the connections idle past their time, once a second while any is idle. Optimization:
   * one timer for the pool rather than one set and cleared per request.
   */
  readonly #sweepIdle = () => {
    this.#sweep = null;
    const now = Date.now();
    for (const c of this.#idle.filter((c) => c.idleUntil <= now)) c.destroy();
    if (this.#idle.length > 0) this.#sweep = setTimeout(this.#sweepIdle, 1_000).unref();
  };

  /** A connection closed (idle or not). */
  gone(conn: Conn, busy: boolean): void {
    this.#open--;
    if (busy) this.#busy--;
    const i = this.#idle.indexOf(conn);
    if (i !== -1) this.#idle.splice(i, 1);
    // Room for a queued request.
    const next = this.#queue.shift();
    if (next !== undefined) this.dispatch(next.req, next.handler);
    else if (this.#closed && this.#busy === 0) this.#drained?.();
  }

  /** Graceful: requests queued or under way finish, then the connections close. */
  close(): Promise<void> {
    this.#closed = true;
    if (this.#sweep !== null) clearTimeout(this.#sweep);
    for (const c of this.#idle.splice(0)) c.destroy();
    if (this.#busy === 0 && this.#queue.length === 0) return Promise.resolve();
    return new Promise((resolve) => {
      this.#drained = resolve;
    });
  }
}

/** One request and its response, as the handler's controller. */
class Exchange implements Dispatcher.DispatchController {
  readonly req: H1Request;
  readonly handler: Dispatcher.DispatchHandler;
  readonly conn: Conn | null;
  #aborted = false;
  #paused = false;
  #reason: Error | null = null;
  /** A byte of it was written. */
  started = false;
  /** The handler has had its last call. */
  done = false;

  constructor(req: H1Request, handler: Dispatcher.DispatchHandler, conn: Conn | null) {
    this.req = req;
    this.handler = handler;
    this.conn = conn;
  }

  get aborted(): boolean {
    return this.#aborted;
  }
  get paused(): boolean {
    return this.#paused;
  }
  get reason(): Error | null {
    return this.#reason;
  }

  abort(reason: Error): void {
    if (this.done || this.#aborted) return;
    this.#aborted = true;
    this.#reason = reason;
    this.conn?.abort(this, reason);
  }

  // Once done, the connection may already serve another exchange: a late call touches nothing.
  pause(): void {
    this.#paused = true;
    if (!this.done) this.conn?.socket.pause();
  }

  resume(): void {
    this.#paused = false;
    if (!this.done) this.conn?.socket.resume();
  }

  fail(err: Error): void {
    if (this.done) return;
    this.done = true;
    this.handler.onResponseError?.(this, err);
  }
}

class Conn {
  readonly pool: H1Pool;
  readonly socket: Socket;
  readonly parser: Parser;
  #ex: Exchange | null = null;
  #connectTimer: NodeJS.Timeout | null;
  /** Date.now() past which this connection, idle, is not used again. */
  idleUntil = 0;
  /** The request's body went whole (the connection may then be reused). */
  #sent = false;
  #keepAlive = false;
  #keepAliveHint = 0;
  #trailers: IncomingHttpHeaders | null = null;
  #responded = false;
  /**
   * Header lines llhttp flushed before the head's end (it hands them over 32 at a time) or, once
   * the response started, trailer lines.
   */
  #lines: string[] | null = null;
  gone = false;

  constructor(pool: H1Pool) {
    this.pool = pool;
    const o = pool.options;
    // As undici's connector dials: no Nagle, TCP keep-alive probes after a minute idle.
    const socket = netConnect({
      host: o.host,
      port: o.port,
      noDelay: true,
      keepAlive: true,
      keepAliveInitialDelay: 60_000,
    });
    this.socket = socket;
    this.#connectTimer = setTimeout(
      () => this.#fail(codeError('connect timeout', 'UND_ERR_CONNECT_TIMEOUT')),
      o.connectMs,
    );
    socket.once('connect', () => {
      if (this.#connectTimer !== null) clearTimeout(this.#connectTimer);
      this.#connectTimer = null;
    });
    const parser: Parser = new HTTPParser();
    parser.initialize(HTTPParser.RESPONSE, {}, 0, 0);
    parser[kOnHeadersComplete] = this.#onHead;
    parser[kOnHeaders] = this.#onLines;
    parser[kOnBody] = this.#onBody;
    parser[kOnMessageComplete] = this.#onComplete;
    this.parser = parser;
    socket.on('data', this.#onData);
    socket.on('error', (err) => this.#fail(err));
    socket.on('end', this.#onEnd);
    socket.on('close', () => {
      this.#fail(codeError('other side closed', 'UND_ERR_SOCKET'));
      // Freed here, never in destroy(): that may run inside one of its callbacks, and llhttp
      // freed while it executes is a crash. A destroyed socket reads nothing more.
      this.parser.close();
    });
  }

  run(req: H1Request, handler: Dispatcher.DispatchHandler): void {
    const ex = new Exchange(req, handler, this);
    this.#ex = ex;
    this.#sent = false;
    this.#responded = false;
    this.#trailers = null;
    this.#lines = null;
    this.#keepAliveHint = 0;
    handler.onRequestStart?.(ex, {});
    if (ex.aborted) return;
    const head = this.#head(req);
    if (head instanceof Error) {
      ex.abort(head);
      return;
    }
    const body = req.body ?? null;
    const socket = this.socket;
    if (body !== null && !Buffer.isBuffer(body)) {
      this.#stream(ex, body, head.text, head.length);
      return;
    }
    ex.started = true;
    if (body === null) {
      socket.write(
        req.method === 'POST' || req.method === 'PUT' || req.method === 'PATCH'
          ? `${head.text}content-length: 0\r\n\r\n`
          : `${head.text}\r\n`,
        'latin1',
      );
      this.#bodySent();
    } else {
      // One write of one buffer for the head and the body. Measured: a corked write of the two
      // (a writev, as undici sends a body it holds) cost ~4 µs more user CPU a POST.
      const text = `${head.text}content-length: ${body.length}\r\n\r\n`;
      const out = Buffer.allocUnsafe(text.length + body.length);
      out.write(text, 0, 'latin1');
      body.copy(out, text.length);
      socket.write(out);
      this.#bodySent();
    }
  }

  /** The request's head but its framing (Content-Length or chunked) and blank line, or why it cannot go. */
  #head(req: H1Request): { text: string; length: number } | Error {
    if (INVALID_PATH.test(req.path)) return codeError('invalid request path', 'UND_ERR_INVALID_ARG');
    let host = this.pool.options.hostHeader;
    let lines = '';
    let length = -1;
    const headers = req.headers;
    if (headers != null)
      for (const name in headers) {
        const v = headers[name];
        if (v === undefined) continue;
        if (typeof v === 'string') {
          if (INVALID_VALUE.test(v)) return invalid(name);
          if (name === 'host') host = v;
          else if (name === 'content-length') length = Number(v);
          else if (FRAMING.has(name)) return invalid(name);
          else lines += `${name}: ${v}\r\n`;
        } else
          for (const one of v) {
            if (INVALID_VALUE.test(one) || FRAMING.has(name) || name === 'host' || name === 'content-length')
              return invalid(name);
            lines += `${name}: ${one}\r\n`;
          }
      }
    return { text: `${req.method} ${req.path} HTTP/1.1\r\nhost: ${host}\r\n${lines}`, length };
  }

  /**
   * A body that streams: the head goes with its first chunk (one write, and no request starts
   * upstream for a body that fails before its first byte: the connection stays clean), then each
   * chunk as it comes, with backpressure; chunked when its length is not known.
   */
  #stream(ex: Exchange, body: Readable, head: string, length: number): void {
    const chunked = length < 0;
    const socket = this.socket;
    let pending: string | null = chunked
      ? `${head}transfer-encoding: chunked\r\n\r\n`
      : `${head}content-length: ${length}\r\n\r\n`;
    let written = 0;
    const onDrain = () => body.resume();
    const cleanup = () => {
      body.off('data', onData);
      body.off('end', onEnd);
      body.off('error', onError);
      socket.off('drain', onDrain);
    };
    const onData = (chunk: Buffer) => {
      if (this.#ex !== ex) return cleanup();
      written += chunk.length;
      if (!chunked && written > length) {
        cleanup();
        return ex.abort(
          codeError('request body longer than its Content-Length', 'UND_ERR_REQ_CONTENT_LENGTH_MISMATCH'),
        );
      }
      socket.cork();
      if (pending !== null) {
        socket.write(pending, 'latin1');
        pending = null;
        ex.started = true;
      }
      let ok: boolean;
      if (chunked) {
        socket.write(`${chunk.length.toString(16)}\r\n`, 'latin1');
        socket.write(chunk);
        ok = socket.write('\r\n', 'latin1');
      } else ok = socket.write(chunk);
      socket.uncork();
      if (!ok) body.pause();
    };
    const onEnd = () => {
      cleanup();
      if (this.#ex !== ex) return;
      if (!chunked && written !== length)
        return ex.abort(
          codeError('request body shorter than its Content-Length', 'UND_ERR_REQ_CONTENT_LENGTH_MISMATCH'),
        );
      ex.started = true;
      socket.write(chunked ? `${pending ?? ''}0\r\n\r\n` : (pending ?? ''), 'latin1');
      pending = null;
      this.#bodySent();
    };
    const onError = (err: Error) => {
      cleanup();
      ex.abort(err);
    };
    body.on('data', onData);
    body.on('end', onEnd);
    body.on('error', onError);
    socket.on('drain', onDrain);
    body.resume();
  }

  #bodySent(): void {
    this.#sent = true;
    const ex = this.#ex;
    if (ex === null) return;
    (ex.handler as { onRequestSent?: () => void }).onRequestSent?.();
  }

  readonly #onData = (chunk: Buffer) => {
    let r: number | Error;
    try {
      r = this.parser.execute(chunk);
    } catch (err) {
      // A handler threw inside a parser callback: that exchange ends with it, the process goes on.
      r = err as Error;
    }
    if (r instanceof Error) this.#fail(r);
  };

  readonly #onEnd = () => {
    // A response read to the connection's end (no Content-Length, not chunked) ends here; any
    // other cut short is the peer closing (as undici says it: not a malformed response).
    this.parser.finish();
    this.#fail(codeError('other side closed', 'UND_ERR_SOCKET'));
  };

  readonly #onHead = (
    _major: number,
    _minor: number,
    flushed: string[] | undefined,
    _method: unknown,
    _url: unknown,
    status: number,
    message: string,
    _upgrade: boolean,
    keepAlive: boolean,
  ): number => {
    const ex = this.#ex;
    if (ex === null || ex.done) {
      this.#fail(codeError('a response nobody asked for', 'UND_ERR_SOCKET'));
      return 1;
    }
    const raw = this.#lines === null ? (flushed ?? []) : this.#lines.concat(flushed ?? []);
    this.#lines = null;
    if (status < 200) return 0; // informational: the final response follows
    this.#keepAlive = keepAlive;
    this.#responded = true;
    const headers: IncomingHttpHeaders = {};
    for (let i = 0; i < raw.length; i += 2) {
      const name = raw[i].toLowerCase();
      const value = raw[i + 1];
      const prev = headers[name];
      if (prev === undefined) headers[name] = value;
      else if (Array.isArray(prev)) prev.push(value);
      else headers[name] = [prev, value];
      if (name === 'keep-alive') this.#keepAliveHint = keepAliveTimeout(value);
    }
    ex.handler.onResponseStart?.(ex, status, headers, message);
    return ex.req.method === 'HEAD' ? 1 : 0;
  };

  readonly #onBody = (chunk: Buffer) => {
    const ex = this.#ex;
    if (ex === null || ex.done || ex.aborted) return;
    ex.handler.onResponseData?.(ex, chunk);
  };

  readonly #onLines = (raw: string[]) => {
    if (!this.#responded) {
      this.#lines = this.#lines === null ? raw : this.#lines.concat(raw);
      return;
    }
    this.#trailers ??= {};
    const t = this.#trailers;
    for (let i = 0; i < raw.length; i += 2) t[raw[i].toLowerCase()] = raw[i + 1];
  };

  readonly #onComplete = () => {
    const ex = this.#ex;
    if (ex === null || !this.#responded || ex.done) return; // an informational response's end
    ex.done = true;
    ex.handler.onResponseEnd?.(ex, this.#trailers ?? {});
    // Reused only when the exchange is whole both ways: a response that came before the body
    // was through leaves the connection in no known state.
    if (this.#ex !== ex) return; // the handler aborted meanwhile
    if (!this.#keepAlive || !this.#sent) {
      this.destroy();
      return;
    }
    this.#ex = null;
    if (this.socket.isPaused()) this.socket.resume();
    this.pool.release(this);
  };

  /** Goes idle: false when it may not be kept (closed instead). */
  idle(keepAliveMs: number): boolean {
    // The upstream's Keep-Alive hint, less a second for the race of a request sent as it closes.
    const ms = this.#keepAliveHint > 0 ? Math.min(keepAliveMs, this.#keepAliveHint - 1_000) : keepAliveMs;
    if (ms <= 0) {
      this.destroy();
      return false;
    }
    this.idleUntil = Date.now() + ms;
    return true;
  }

  /** The handler aborts: before any byte went, the connection is still good. */
  abort(ex: Exchange, reason: Error): void {
    if (this.#ex !== ex) return;
    if (!ex.started) {
      this.#ex = null;
      ex.fail(reason);
      this.pool.release(this);
      return;
    }
    this.destroy();
    ex.fail(reason);
  }

  #fail(err: Error): void {
    const ex = this.#ex;
    this.destroy();
    ex?.fail(err);
  }

  destroy(): void {
    if (this.gone) return;
    this.gone = true;
    const busy = this.#ex !== null;
    this.#ex = null;
    if (this.#connectTimer !== null) clearTimeout(this.#connectTimer);
    this.socket.destroy();
    this.pool.gone(this, busy);
  }
}

interface Parser {
  execute(b: Buffer): number | Error;
  finish(): number | Error | undefined;
  initialize(type: number, resource: object, maxHeaderSize: number, lenient: number): void;
  close(): void;
  [k: number]: unknown;
}

/** Framing is this client's: a caller's copy is refused, as undici refuses it. */
const FRAMING = new Set(['transfer-encoding', 'connection', 'keep-alive', 'upgrade', 'expect']);

const invalid = (name: string) => codeError(`invalid ${name} header`, 'UND_ERR_INVALID_ARG');

/** `timeout=5, max=100` → 5000 (ms); 0 when absent. */
function keepAliveTimeout(value: string): number {
  const m = /timeout=(\d+)/i.exec(value);
  return m === null ? 0 : Number(m[1]) * 1000;
}
