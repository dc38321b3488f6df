/**
 * An echo back end like the Gateway API conformance suite's (echo-basic): it answers every
 * request with JSON naming what it received (path, host, method, proto, headers) and who it is
 * (namespace, pod), so a test can tell which back end of which Service answered and what the
 * gateway sent it. It also behaves as echo-basic does where conformance tests rely on it:
 * - `/status/NNN` answers status NNN (any other `/status/…` 400), `/health` answers 200 OK;
 * - `?delay=<Go duration>` (`1s`, `500ms`) waits that long before answering (timeout tests);
 * - `?uuid=<id>&succeedAfter=N&responseCode=NNN` (its retry simulation): the first N requests
 *   with that uuid answer NNN (default 500), those after it as usual (retry tests);
 * - `X-Echo-Set-Header: Name: value, Other: value` sets those response headers (response
 *   header modifier tests);
 * - a WebSocket upgrade (on any path; echo-basic's is /ws) gets a socket echoing each message.
 *
 * One port serves HTTP/1.1 and h2c with prior knowledge (what gRPC clients without TLS and
 * `appProtocol: kubernetes.io/h2c` upstreams speak): Node's http2.createServer refuses HTTP/1.1
 * on cleartext even with allowHTTP1 (that option is for ALPN on TLS), so the first bytes of each
 * connection pick the server: the HTTP/2 connection preface goes to an http2 server, anything
 * else to an http server, both without a listening socket of their own. `h2cOnly` answers
 * HTTP/1.1 with 400, as echo-basic's h2c port (3001) does, so a test can tell the gateway spoke
 * HTTP/1.1 where it should have spoken h2c. With `tls`, the port serves TLS (ALPN h2 and
 * http/1.1) instead, as echo-basic's HTTPS port (8443), and the answer says what TLS it saw.
 *
 * Headers in the answer: as echo-basic's (Go's http.Header): each name in canonical case
 * (`X-Forwarded-For`, `Content-Type`: the first letter and each one after a `-` upper case, the
 * rest lower case), mapped to its values in the order received, a header repeated on the wire
 * giving several values (not joined with commas). Host is not among them (it is `host`), nor
 * are HTTP/2 pseudo-headers (`:authority` is `host`, `:path` is `path`).
 */
import { once } from 'node:events';
import { createServer as createHttpServer, type IncomingMessage } from 'node:http';
import { createServer as createH2cServer, createSecureServer, type Http2SecureServer } from 'node:http2';
import { createServer as createNetServer, type AddressInfo, type Server, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { TLSSocket } from 'node:tls';
import { WebSocketServer } from 'ws';

/** What the echo answers (and records): echo-basic's JSON, the fields a test needs. */
export interface EchoAnswer {
  /** The request target as received (path and query). */
  path: string;
  /** Host header, or HTTP/2 :authority. */
  host: string;
  method: string;
  /** HTTP/1.1 or HTTP/2.0. */
  proto: string;
  /** Canonical name → values in order (see the file's comment). */
  headers: Record<string, string[]>;
  namespace: string;
  pod: string;
  /** Only on a TLS port. */
  tls?: { version: string; serverName: string; negotiatedProtocol: string; cipherSuite: string };
}

export interface EchoOptions {
  /** A loopback address (127.0.3.7). */
  host: string;
  /** 0 for a free one. */
  port: number;
  namespace: string;
  pod: string;
  /** Refuse HTTP/1.1 with 400 "Expected h2c request" (echo-basic's h2c port). */
  h2cOnly?: boolean;
  /** Serve TLS with this certificate and key (PEM), ALPN h2 and http/1.1. */
  tls?: { cert: string; key: string };
}

export interface EchoServer {
  host: string;
  port: number;
  namespace: string;
  pod: string;
  /** Every request answered (WebSocket handshakes too), oldest first. */
  requests: EchoAnswer[];
  close(): Promise<void>;
}

/** Go's http.CanonicalHeaderKey for a valid token. */
export const canonicalHeader = (name: string): string =>
  name.toLowerCase().replace(/(^|-)([a-z])/g, (_m, dash: string, c: string) => dash + c.toUpperCase());

const UNIT_MS: Record<string, number> = {
  ns: 1e-6,
  us: 1e-3,
  µs: 1e-3,
  ms: 1,
  s: 1_000,
  m: 60_000,
  h: 3_600_000,
};

/** A Go duration (`1s`, `1.5s`, `1m30s`, `250ms`) in milliseconds; null if it is not one. */
export function parseGoDuration(text: string): number | null {
  if (!/^([0-9]*(\.[0-9]*)?(ns|us|µs|ms|s|m|h))+$/.test(text) && text !== '0') return null;
  let ms = 0;
  for (const m of text.matchAll(/([0-9]*(?:\.[0-9]*)?)(ns|us|µs|ms|s|m|h)/g)) {
    if (m[1] === '' || m[1] === '.') return null;
    ms += Number(m[1]) * UNIT_MS[m[2]];
  }
  return ms;
}

/** The parts of a request both http and http2 (compatibility API) give. */
interface Req {
  url?: string;
  method?: string;
  httpVersion: string;
  headers: Record<string, string | string[] | undefined>;
  rawHeaders: string[];
  socket: Socket | TLSSocket;
}

interface Res {
  statusCode: number;
  setHeader(name: string, value: string): unknown;
  end(body: string): unknown;
}

function headersOf(raw: string[]): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i];
    if (name.startsWith(':') || name.toLowerCase() === 'host') continue;
    const key = canonicalHeader(name);
    out[key] = [...(out[key] ?? []), raw[i + 1]];
  }
  return out;
}

function tlsOf(socket: Socket | TLSSocket): EchoAnswer['tls'] {
  const s = socket as TLSSocket;
  if (typeof s.getProtocol !== 'function') return undefined;
  return {
    version: s.getProtocol() ?? '',
    serverName: typeof s.servername === 'string' ? s.servername : '',
    negotiatedProtocol: typeof s.alpnProtocol === 'string' ? s.alpnProtocol : '',
    cipherSuite: s.getCipher()?.standardName ?? '',
  };
}

function answerOf(req: Req, who: { namespace: string; pod: string }, tls: boolean): EchoAnswer {
  const host = req.headers[':authority'] ?? req.headers.host ?? '';
  return {
    path: req.url ?? '',
    host: Array.isArray(host) ? host[0] : host,
    method: req.method ?? '',
    proto: `HTTP/${req.httpVersion}`,
    headers: headersOf(req.rawHeaders),
    namespace: who.namespace,
    pod: who.pod,
    ...(tls ? { tls: tlsOf(req.socket) } : {}),
  };
}

function json(res: Res, status: number, body: unknown): void {
  res.statusCode = status;
  res.setHeader('content-type', 'application/json');
  res.setHeader('x-content-type-options', 'nosniff');
  res.end(JSON.stringify(body));
}

/** echo-basic's X-Echo-Set-Header: comma-separated `Name: value` pairs, a repeated name appended with a comma. */
function echoSetHeaders(answer: EchoAnswer, res: Res): void {
  const set = new Map<string, string>();
  for (const list of answer.headers['X-Echo-Set-Header'] ?? []) {
    for (const pair of list.split(',')) {
      const [name, ...rest] = pair.trim().split(':');
      if (!name) continue;
      const value = rest.join(':').trim();
      set.set(name, set.has(name) ? `${set.get(name)},${value}` : value);
    }
  }
  for (const [name, value] of set) res.setHeader(name, value);
}

export async function startEcho(o: EchoOptions): Promise<EchoServer> {
  const requests: EchoAnswer[] = [];
  /** Requests seen per retry-simulation uuid. */
  const tries = new Map<string, number>();
  const who = { namespace: o.namespace, pod: o.pod };

  const handle = async (req: Req, res: Res): Promise<void> => {
    const answer = answerOf(req, who, o.tls !== undefined);
    requests.push(answer);
    if (o.h2cOnly && req.httpVersion !== '2.0') {
      res.statusCode = 400;
      res.end('Expected h2c request');
      return;
    }
    const url = new URL(answer.path, 'http://echo');
    if (url.pathname === '/health') {
      res.statusCode = 200;
      res.end('OK');
      return;
    }
    if (url.pathname.startsWith('/status/')) {
      const code = /^\/status\/(\d\d\d)$/.exec(answer.path);
      res.statusCode = code ? Number(code[1]) : 400;
      res.end('');
      return;
    }
    const uuid = url.searchParams.get('uuid');
    const succeedAfter = url.searchParams.get('succeedAfter');
    if (uuid !== null && succeedAfter !== null) {
      const seen = (tries.get(uuid) ?? 0) + 1;
      tries.set(uuid, seen);
      if (seen <= Number(succeedAfter)) {
        res.statusCode = Number(url.searchParams.get('responseCode') ?? 500);
        res.end('');
        return;
      }
    }
    const delay = url.searchParams.get('delay');
    if (delay) {
      const ms = parseGoDuration(delay);
      if (ms === null) return json(res, 500, { message: `time: invalid duration "${delay}"` });
      await new Promise((r) => setTimeout(r, ms));
    }
    echoSetHeaders(answer, res);
    json(res, 200, answer);
  };
  const onRequest = (req: Req, res: Res) => {
    handle(req, res).catch((e: Error) => json(res, 500, { message: e.message }));
  };

  const wss = new WebSocketServer({ noServer: true });
  const onUpgrade = (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    if (o.h2cOnly || req.headers.upgrade?.toLowerCase() !== 'websocket') {
      socket.destroy();
      return;
    }
    requests.push(answerOf(req, who, o.tls !== undefined));
    wss.handleUpgrade(req, socket, head, (ws) => {
      ws.on('message', (data, isBinary) => ws.send(data, { binary: isBinary }));
    });
  };

  const sockets = new Set<Socket>();
  let listener: Server | Http2SecureServer;
  if (o.tls) {
    const server = createSecureServer({ ...o.tls, allowHTTP1: true }, onRequest);
    server.on('upgrade', onUpgrade);
    listener = server;
  } else {
    const http1 = createHttpServer(onRequest);
    http1.on('upgrade', onUpgrade);
    const h2c = createH2cServer(onRequest);
    const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n');
    listener = createNetServer((socket) => {
      let head = Buffer.alloc(0);
      const sniff = (chunk: Buffer) => {
        head = Buffer.concat([head, chunk]);
        const n = Math.min(head.length, PREFACE.length);
        const h2 = head.subarray(0, n).equals(PREFACE.subarray(0, n));
        if (h2 && head.length < PREFACE.length) return; // a prefix of the preface so far: wait for more
        socket.off('data', sniff);
        // The http2 session reads what is buffered with socket.read() on the next tick: paused,
        // the buffer waits for it (flowing, it would be emitted to no listener). The http server
        // takes it from 'data' events, so that socket keeps flowing.
        if (h2) socket.pause();
        socket.unshift(head);
        (h2 ? h2c : http1).emit('connection', socket);
      };
      socket.on('data', sniff);
    });
  }
  listener.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('error', () => s.destroy());
    s.once('close', () => sockets.delete(s));
  });
  listener.listen(o.port, o.host);
  await Promise.race([
    once(listener, 'listening'),
    once(listener, 'error').then(([e]) => {
      throw e;
    }),
  ]);
  return {
    host: o.host,
    port: (listener.address() as AddressInfo).port,
    namespace: o.namespace,
    pod: o.pod,
    requests,
    async close() {
      for (const c of wss.clients) c.terminate();
      const closed = new Promise((r) => listener.close(r));
      for (const s of sockets) s.destroy();
      await closed;
    },
  };
}
