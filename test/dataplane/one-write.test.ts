/**
 * A proxied response whose body comes in one chunk of up to 16 KiB leaves the gateway with its
 * head as one piece (dataplane/upstream/try.ts holds the chunk to the end, upstream/one-write.ts
 * sends it as a latin1 string appended to the head), byte for byte what the upstream sent; other
 * bodies (larger, in several chunks, none) go as before. A real data plane in front of a real
 * upstream on loopback; the pieces are counted as the client's socket in the data plane is
 * handed them (its _write and _writev, what Node's streams call for each write the socket makes).
 */
import { Socket } from 'node:net';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DataPlane } from '../../dataplane/main.ts';
import { startTestDataPlane, startUpstream, type Upstream } from '../helpers/servers.ts';
import { route, snapshot, upstream } from '../helpers/tables.ts';

let up: Upstream;
let dp: DataPlane;

/** n bytes, every value from 0 to 255 in turn (latin1 maps each to one character and back). */
const bytes = (n: number) => Buffer.from(Array.from({ length: n }, (_, i) => i % 256));
const UTF8 = '{"name":"café €5 日本 ✓"}';

beforeAll(async () => {
  up = await startUpstream((req, res) => {
    const url = req.url ?? '';
    if (url.startsWith('/bytes/')) {
      const body = bytes(Number(url.slice('/bytes/'.length)));
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': body.length });
      res.end(req.method === 'HEAD' ? undefined : body);
      return true;
    }
    if (url === '/utf8') {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(UTF8) });
      res.end(UTF8);
      return true;
    }
    if (url === '/two') {
      // Two chunks 30 ms apart: the data plane gets each on its own.
      res.writeHead(200, { 'content-type': 'text/plain', 'content-length': 10 });
      res.write('hello');
      setTimeout(() => res.end('world'), 30);
      return true;
    }
  });
  dp = await startTestDataPlane({
    initialSnapshot: snapshot([route('all', 'up', '/')], [upstream('up', up.url)]),
  });
});

afterAll(async () => {
  await dp?.close();
  await up?.close();
});

/** The non-empty pieces each socket write of the data plane's client side is handed, during `fn`. */
async function piecesWritten(fn: () => Promise<void>): Promise<number[]> {
  const port = Number(new URL(dp.proxyUrl).port);
  // biome-ignore lint/suspicious/noExplicitAny: Writable's implementer methods, not in Socket's types
  const proto = Socket.prototype as any;
  const write = proto._write;
  const writev = proto._writev;
  const writes: number[] = [];
  const size = (c: unknown) => (typeof c === 'string' || Buffer.isBuffer(c) ? c.length : 0);
  proto._write = function (this: Socket, chunk: unknown, ...rest: unknown[]) {
    if (this.localPort === port) writes.push(size(chunk) > 0 ? 1 : 0);
    return write.call(this, chunk, ...rest);
  };
  proto._writev = function (this: Socket, chunks: { chunk: unknown }[], ...rest: unknown[]) {
    if (this.localPort === port) writes.push(chunks.filter((c) => size(c.chunk) > 0).length);
    return writev.call(this, chunks, ...rest);
  };
  try {
    await fn();
  } finally {
    proto._write = write;
    proto._writev = writev;
  }
  return writes.filter((n) => n > 0);
}

async function get(path: string, method: 'GET' | 'HEAD' = 'GET') {
  const res = await request(`${dp.proxyUrl}${path}`, { method });
  return {
    status: res.statusCode,
    length: res.headers['content-length'],
    body: Buffer.from(await res.body.arrayBuffer()),
  };
}

describe('a proxied response in one write', () => {
  it('a body in one chunk, every byte value, leaves with its head as one piece, byte for byte', async () => {
    let r: Awaited<ReturnType<typeof get>> | undefined;
    const pieces = await piecesWritten(async () => {
      r = await get('/bytes/256');
    });
    expect(r?.status).toBe(200);
    expect(r?.length).toBe('256');
    expect(r?.body.equals(bytes(256))).toBe(true);
    expect(pieces).toEqual([1]);
  });

  it('a UTF-8 body comes back byte for byte', async () => {
    const r = await get('/utf8');
    expect(r.body.toString('utf8')).toBe(UTF8);
    expect(r.length).toBe(String(Buffer.byteLength(UTF8)));
  });

  it('16 KiB goes in one piece, a byte more as head and body apart, both byte for byte', async () => {
    for (const [n, expected] of [
      [16 * 1024, 1],
      [16 * 1024 + 1, 2],
    ] as const) {
      let r: Awaited<ReturnType<typeof get>> | undefined;
      const pieces = await piecesWritten(async () => {
        r = await get(`/bytes/${n}`);
      });
      expect(r?.body.equals(bytes(n))).toBe(true);
      expect(r?.length).toBe(String(n));
      expect(pieces.reduce((a, b) => a + b, 0)).toBe(expected);
    }
  });

  it('a body in two chunks goes as it comes, whole', async () => {
    let r: Awaited<ReturnType<typeof get>> | undefined;
    const pieces = await piecesWritten(async () => {
      r = await get('/two');
    });
    expect(r?.body.toString()).toBe('helloworld');
    expect(r?.length).toBe('10');
    expect(pieces.reduce((a, b) => a + b, 0)).toBeGreaterThan(1);
  });

  it('HEAD: the head alone, with the Content-Length of the body it does not carry', async () => {
    const r = await get('/bytes/100', 'HEAD');
    expect(r.status).toBe(200);
    expect(r.length).toBe('100');
    expect(r.body.length).toBe(0);
  });
});
