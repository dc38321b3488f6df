/**
 * The data plane's own HTTP/1.1 client (dataplane/upstream/h1-pool.ts) against real servers on
 * loopback: node:http where a well-formed peer will do, a raw TCP server where the test needs
 * bytes node:http would never send (a response read to the connection's end, a duplicate
 * Content-Length, more than 32 header lines).
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from 'node:http';
import {
  type AddressInfo,
  connect,
  createServer as createNetServer,
  type Server,
  type Socket,
} from 'node:net';
import { Readable } from 'node:stream';
import type { Dispatcher } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { H1Pool, type H1Request } from '../../dataplane/upstream/h1-pool.ts';
import { upstreamErrorCode } from '../../dataplane/upstream/errors.ts';
import { freePort } from '../helpers/servers.ts';

interface Result {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  trailers: Record<string, string | string[] | undefined> | null;
  error: (Error & { code?: string }) | null;
  sent: boolean;
}

/** Dispatches one request and collects what the handler was told. */
function send(pool: H1Pool, req: H1Request, onStart?: (c: Dispatcher.DispatchController) => void) {
  return new Promise<Result>((resolve) => {
    const r: Result = { status: 0, headers: {}, body: '', trailers: null, error: null, sent: false };
    const chunks: Buffer[] = [];
    const handler = {
      onRequestStart: (c: Dispatcher.DispatchController) => onStart?.(c),
      onRequestSent: () => {
        r.sent = true;
      },
      onResponseStart: (_c: Dispatcher.DispatchController, status: number, headers: Result['headers']) => {
        r.status = status;
        r.headers = headers;
      },
      onResponseData: (_c: Dispatcher.DispatchController, chunk: Buffer) => {
        chunks.push(chunk);
      },
      onResponseEnd: (_c: Dispatcher.DispatchController, trailers: Result['trailers']) => {
        r.body = Buffer.concat(chunks).toString();
        r.trailers = trailers;
        resolve(r);
      },
      onResponseError: (_c: Dispatcher.DispatchController | null, err: Error) => {
        r.body = Buffer.concat(chunks).toString();
        r.error = err;
        resolve(r);
      },
    };
    pool.dispatch(req, handler as Dispatcher.DispatchHandler);
  });
}

const closers: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of closers.splice(0).reverse()) await c();
});

/** A node:http upstream counting its connections, answering through `answer`. */
async function httpUpstream(
  answer: (req: IncomingMessage, res: ServerResponse, body: string) => void,
  keepAliveMs = 5_000,
) {
  const server = createHttpServer({ keepAliveTimeout: keepAliveMs }, async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    answer(req, res, Buffer.concat(chunks).toString());
  });
  let connections = 0;
  let closed = 0;
  server.on('connection', (socket) => {
    connections++;
    socket.on('close', () => closed++);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  closers.push(() => {
    server.closeAllConnections();
    return new Promise((r) => server.close(r));
  });
  return {
    port: (server.address() as AddressInfo).port,
    connections: () => connections,
    closed: () => closed,
  };
}

/** A TCP upstream that answers each request's head with `reply` (raw bytes). */
async function rawUpstream(reply: (head: string, socket: Socket) => void) {
  const server: Server = createNetServer((socket) => {
    let buf = '';
    socket.on('data', (d) => {
      buf += d.toString('latin1');
      let end = buf.indexOf('\r\n\r\n');
      while (end !== -1) {
        const head = buf.slice(0, end);
        buf = buf.slice(end + 4);
        reply(head, socket);
        end = buf.indexOf('\r\n\r\n');
      }
    });
    socket.on('error', () => {});
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  closers.push(() => new Promise((r) => server.close(r)));
  return (server.address() as AddressInfo).port;
}

function pool(port: number, over: Partial<ConstructorParameters<typeof H1Pool>[0]> = {}) {
  const p = new H1Pool({
    host: '127.0.0.1',
    port,
    hostHeader: `upstream.test:${port}`,
    connections: 8,
    connectMs: 2_000,
    keepAliveMs: 30_000,
    ...over,
  });
  closers.push(() => p.close());
  return p;
}

const echo = (req: IncomingMessage, res: ServerResponse, body: string) =>
  res.end(JSON.stringify({ method: req.method, url: req.url, headers: req.headers, body }));

describe('H1Pool', () => {
  it('sends the head as given, the Host of the origin, and reuses one connection', async () => {
    const up = await httpUpstream(echo);
    const p = pool(up.port);
    for (let i = 0; i < 3; i++) {
      const r = await send(p, { method: 'GET', path: `/a?i=${i}`, headers: { 'x-one': 'v', accept: 'a/b' } });
      expect(r.error).toBeNull();
      expect(r.status).toBe(200);
      const seen = JSON.parse(r.body);
      expect(seen).toMatchObject({ method: 'GET', url: `/a?i=${i}`, body: '' });
      expect(seen.headers).toMatchObject({ host: `upstream.test:${up.port}`, 'x-one': 'v', accept: 'a/b' });
      expect(seen.headers['content-length']).toBeUndefined();
    }
    expect(up.connections()).toBe(1);
    // A Host the caller sets (a route that keeps the client's) is the one sent.
    const r = await send(p, { method: 'GET', path: '/', headers: { host: 'kept.example' } });
    expect(JSON.parse(r.body).headers.host).toBe('kept.example');
  });

  it('sends a body it holds with its length, and a POST without one with Content-Length: 0', async () => {
    const up = await httpUpstream(echo);
    const p = pool(up.port);
    const r = await send(p, {
      method: 'POST',
      path: '/b',
      // The client's Content-Length is replaced by the body's own.
      headers: { 'content-length': '999' },
      body: Buffer.from('{"a":1}'),
    });
    expect(r.sent).toBe(true);
    expect(JSON.parse(r.body)).toMatchObject({ body: '{"a":1}', headers: { 'content-length': '7' } });
    const empty = await send(p, { method: 'POST', path: '/b', headers: {}, body: null });
    expect(JSON.parse(empty.body)).toMatchObject({ body: '', headers: { 'content-length': '0' } });
    expect(up.connections()).toBe(1);
  });

  it('streams a body of known length as is, and one of unknown length chunked', async () => {
    const up = await httpUpstream(echo);
    const p = pool(up.port);
    const known = await send(p, {
      method: 'PUT',
      path: '/k',
      headers: { 'content-length': '6' },
      body: Readable.from([Buffer.from('abc'), Buffer.from('def')]),
    });
    expect(JSON.parse(known.body)).toMatchObject({ body: 'abcdef', headers: { 'content-length': '6' } });
    const chunked = await send(p, {
      method: 'POST',
      path: '/c',
      headers: {},
      body: Readable.from([Buffer.from('x'.repeat(70_000)), Buffer.from('yz')]),
    });
    const seen = JSON.parse(chunked.body);
    expect(seen.headers['transfer-encoding']).toBe('chunked');
    expect(seen.body).toBe(`${'x'.repeat(70_000)}yz`);
    expect(up.connections()).toBe(1);
  });

  it('fails a streamed body shorter than its Content-Length, and the next request still goes', async () => {
    const up = await httpUpstream(echo);
    const p = pool(up.port);
    const r = await send(p, {
      method: 'PUT',
      path: '/short',
      headers: { 'content-length': '10' },
      body: Readable.from([Buffer.from('abc')]),
    });
    expect(r.error?.code).toBe('UND_ERR_REQ_CONTENT_LENGTH_MISMATCH');
    const next = await send(p, { method: 'GET', path: '/next', headers: {} });
    expect(JSON.parse(next.body).url).toBe('/next');
  });

  it('passes a chunked response on with its trailers', async () => {
    const up = await httpUpstream((_req, res) => {
      res.writeHead(200, { trailer: 'x-checksum' });
      res.write('part1-');
      res.write('part2');
      res.addTrailers({ 'X-Checksum': 'abc' });
      res.end();
    });
    const r = await send(pool(up.port), { method: 'GET', path: '/', headers: {} });
    expect(r).toMatchObject({ status: 200, body: 'part1-part2', trailers: { 'x-checksum': 'abc' } });
    expect(r.headers['transfer-encoding']).toBe('chunked');
  });

  it('reads no body after HEAD, 204 or 304, and keeps the connection', async () => {
    const up = await httpUpstream((req, res) => {
      if (req.url === '/204') return res.writeHead(204).end();
      if (req.url === '/304') return res.writeHead(304, { etag: '"1"' }).end();
      res.writeHead(200, { 'content-length': '5' }).end(req.method === 'HEAD' ? undefined : 'hello');
    });
    const p = pool(up.port);
    expect(await send(p, { method: 'HEAD', path: '/', headers: {} })).toMatchObject({
      status: 200,
      body: '',
      headers: { 'content-length': '5' },
    });
    expect(await send(p, { method: 'GET', path: '/204', headers: {} })).toMatchObject({
      status: 204,
      body: '',
    });
    expect(await send(p, { method: 'GET', path: '/304', headers: {} })).toMatchObject({
      status: 304,
      body: '',
    });
    expect(await send(p, { method: 'GET', path: '/', headers: {} })).toMatchObject({
      status: 200,
      body: 'hello',
    });
    expect(up.connections()).toBe(1);
  });

  it('reads a response without length to the connection end, and opens another for the next', async () => {
    let conns = 0;
    const port = await rawUpstream((_head, socket) => {
      conns++;
      socket.end('HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil the end');
    });
    const p = pool(port);
    expect(await send(p, { method: 'GET', path: '/', headers: {} })).toMatchObject({
      status: 200,
      body: 'until the end',
      error: null,
    });
    expect(await send(p, { method: 'GET', path: '/', headers: {} })).toMatchObject({ body: 'until the end' });
    expect(conns).toBe(2);
  });

  it('takes every header of a response with more than 32, repeated ones as a list', async () => {
    const lines = Array.from({ length: 40 }, (_, i) => `X-H${i}: v${i}\r\n`).join('');
    const port = await rawUpstream((_head, socket) =>
      socket.write(
        `HTTP/1.1 200 OK\r\n${lines}Set-Cookie: a=1\r\nSet-Cookie: b=2\r\nContent-Length: 2\r\n\r\nok`,
      ),
    );
    const r = await send(pool(port), { method: 'GET', path: '/', headers: {} });
    expect(r.body).toBe('ok');
    expect(r.headers['x-h0']).toBe('v0');
    expect(r.headers['x-h39']).toBe('v39');
    expect(r.headers['set-cookie']).toEqual(['a=1', 'b=2']);
  });

  it('skips an informational response and delivers the final one', async () => {
    const port = await rawUpstream((_head, socket) =>
      socket.write(
        'HTTP/1.1 103 Early Hints\r\nLink: </a.css>\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 1\r\n\r\n!',
      ),
    );
    expect(await send(pool(port), { method: 'POST', path: '/', headers: {}, body: null })).toMatchObject({
      status: 201,
      body: '!',
    });
  });

  it('refuses a malformed response (two Content-Lengths) as a bad response', async () => {
    const port = await rawUpstream((_head, socket) =>
      socket.write('HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nok'),
    );
    const r = await send(pool(port), { method: 'GET', path: '/', headers: {} });
    expect(r.error?.code).toBe('HPE_UNEXPECTED_CONTENT_LENGTH');
    expect(upstreamErrorCode(r.error)).toBe('SLC_ERR_UPSTREAM_BAD_RESPONSE');
  });

  it('refuses a header value with a line break, or a path with a space, before sending anything', async () => {
    const up = await httpUpstream(echo);
    const p = pool(up.port);
    const r = await send(p, { method: 'GET', path: '/', headers: { 'x-bad': 'a\r\nx-injected: 1' } });
    expect(r.error?.code).toBe('UND_ERR_INVALID_ARG');
    const framing = await send(p, { method: 'GET', path: '/', headers: { 'transfer-encoding': 'chunked' } });
    expect(framing.error?.code).toBe('UND_ERR_INVALID_ARG');
    const path = await send(p, { method: 'GET', path: '/a b', headers: {} });
    expect(path.error?.code).toBe('UND_ERR_INVALID_ARG');
    // The connection was never written to: it serves the next request.
    const next = await send(p, { method: 'GET', path: '/ok', headers: {} });
    expect(JSON.parse(next.body).headers['x-injected']).toBeUndefined();
    expect(up.connections()).toBeLessThanOrEqual(1);
  });

  it('says a refused connection was refused (nothing sent)', async () => {
    const r = await send(pool(await freePort()), { method: 'GET', path: '/', headers: {} });
    expect(r.error?.code).toBe('ECONNREFUSED');
    expect(upstreamErrorCode(r.error)).toBe('SLC_ERR_UPSTREAM_UNAVAILABLE');
  });

  it('gives up a connection the upstream never accepts after connectMs, as a connect timeout', async () => {
    // A listener with a backlog of one in a stopped process: the kernel completes the handshakes
    // it has room for, then drops every SYN, so a connect hangs as it does to a host gone silent.
    const child = spawn(process.execPath, [
      '-e',
      "const s = require('node:net').createServer().listen({ port: 0, host: '127.0.0.1', backlog: 1 }, () => console.log(s.address().port))",
    ]);
    closers.push(async () => void child.kill('SIGKILL'));
    const [line] = (await once(child.stdout, 'data')) as [Buffer];
    child.kill('SIGSTOP');
    const port = Number(line.toString());
    const fill = Array.from({ length: 4 }, () => connect(port, '127.0.0.1').on('error', () => {}));
    closers.push(async () => {
      for (const s of fill) s.destroy();
    });
    await new Promise((r) => setTimeout(r, 200));
    const start = Date.now();
    const r = await send(pool(port, { connectMs: 300 }), { method: 'GET', path: '/', headers: {} });
    expect(r.error?.code).toBe('UND_ERR_CONNECT_TIMEOUT');
    expect(Date.now() - start).toBeGreaterThanOrEqual(290);
    expect(upstreamErrorCode(r.error)).toBe('SLC_ERR_UPSTREAM_TIMEOUT');
  });

  it('queues beyond its connections and answers every request in order of arrival', async () => {
    const up = await httpUpstream((req, res) => setTimeout(() => res.end(req.url), 20));
    const p = pool(up.port, { connections: 2 });
    const rs = await Promise.all(
      Array.from({ length: 6 }, (_, i) => send(p, { method: 'GET', path: `/${i}`, headers: {} })),
    );
    expect(rs.map((r) => r.body)).toEqual(['/0', '/1', '/2', '/3', '/4', '/5']);
    expect(up.connections()).toBe(2);
  });

  it('an abort mid-response closes that connection; the next request opens another', async () => {
    let closed = 0;
    const up = await httpUpstream((req, res) => {
      res.on('close', () => closed++);
      if (req.url === '/slow') {
        res.write('first');
        return; // never ends
      }
      res.end('fine');
    });
    const p = pool(up.port);
    const r = await send(p, { method: 'GET', path: '/slow', headers: {} }, (c) => {
      setTimeout(() => c.abort(Object.assign(new Error('gone'), { code: 'SLC_CLIENT_CLOSED' })), 100);
    });
    expect(r.error?.code).toBe('SLC_CLIENT_CLOSED');
    expect(await send(p, { method: 'GET', path: '/', headers: {} })).toMatchObject({ body: 'fine' });
    expect(up.connections()).toBe(2);
    await new Promise((r) => setTimeout(r, 50));
    expect(closed).toBeGreaterThanOrEqual(1);
  });

  it("keeps a connection no longer than the upstream's Keep-Alive timeout less a second", async () => {
    // node:http sends "Keep-Alive: timeout=1" and closes idle connections after 1 s.
    const up = await httpUpstream(echo, 1_000);
    const p = pool(up.port);
    await send(p, { method: 'GET', path: '/', headers: {} });
    // Kept 1 s less a second: not kept at all, so no request races the upstream's close.
    await new Promise((r) => setTimeout(r, 50));
    const r = await send(p, { method: 'GET', path: '/again', headers: {} });
    expect(r.error).toBeNull();
    expect(up.connections()).toBe(2);
  });

  it('ends the exchange of a handler that throws, and the process goes on', async () => {
    const up = await httpUpstream(echo);
    const p = pool(up.port);
    const error = await new Promise<Error>((resolve) =>
      p.dispatch({ method: 'GET', path: '/', headers: {} }, {
        onResponseStart: () => {
          throw new Error('handler bug');
        },
        onResponseError: (_c, err) => resolve(err),
      } as Dispatcher.DispatchHandler),
    );
    expect(error.message).toBe('handler bug');
    expect(await send(p, { method: 'GET', path: '/after', headers: {} })).toMatchObject({ status: 200 });
  });

  it('closes a connection idle past its time, and opens another for the next request', async () => {
    const up = await httpUpstream(echo, 60_000);
    const p = pool(up.port, { keepAliveMs: 300 });
    await send(p, { method: 'GET', path: '/', headers: {} });
    // Reused within its time.
    await send(p, { method: 'GET', path: '/', headers: {} });
    expect(up.connections()).toBe(1);
    await new Promise((r) => setTimeout(r, 1_500));
    // Closed by the sweep (at most a second late), not when the next request comes.
    expect(up.closed()).toBe(1);
    await send(p, { method: 'GET', path: '/', headers: {} });
    expect(up.connections()).toBe(2);
  });

  it('closes gracefully: a request under way finishes, a later one is refused', async () => {
    const up = await httpUpstream((_req, res) => setTimeout(() => res.end('late'), 100));
    const p = pool(up.port);
    const under = send(p, { method: 'GET', path: '/', headers: {} });
    await new Promise((r) => setTimeout(r, 20));
    const closing = p.close();
    expect(p.closed).toBe(true);
    const refused = await send(p, { method: 'GET', path: '/', headers: {} });
    expect(refused.error?.code).toBe('UND_ERR_CLOSED');
    expect((await under).body).toBe('late');
    await closing;
  });
});
