/**
 * request-size-limiting end to end in one data plane (on 127.0.4.1, with --max-body-bytes 64 KiB):
 * the route's limit is the data plane's own, lowered. A Content-Length over it is 413 problem+json
 * and never reaches the upstream; a chunked body over it is cut off with 413 as it streams; a
 * body at the limit passes; a larger maxBytes than the data plane's changes nothing.
 */
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DataPlane } from '../../dataplane/main.ts';
import { startTestDataPlane } from '../helpers/servers.ts';
import { pluginInstance, route, snapshot, upstream } from '../helpers/tables.ts';

/**
 * The upstream: answers with the body's length, counting requests. Its own (not the echo helper):
 * a body cut off mid-stream is an aborted request here, which it must take without failing.
 */
let seen = 0;
let up: Server;
let dp: DataPlane;
beforeAll(async () => {
  up = createServer((req, res) => {
    seen++;
    let bytes = 0;
    req.on('data', (c: Buffer) => {
      bytes += c.length;
    });
    req.on('error', () => {});
    req.on('end', () => res.end(JSON.stringify({ bytes })));
  }).listen(0, '127.0.4.1');
  await once(up, 'listening');
  const url = `http://127.0.4.1:${(up.address() as AddressInfo).port}`;
  const size = (name: string, maxBytes: number) =>
    pluginInstance(name, 'request-size-limiting', { maxBytes });
  dp = await startTestDataPlane({
    host: '127.0.4.1',
    maxBodyBytes: 64 * 1024,
    initialSnapshot: snapshot(
      [
        route('small', 'u', '/small', { plugins: [size('small', 1024)] }),
        route('large', 'u', '/large', { plugins: [size('large', 1024 * 1024)] }),
        route('plain', 'u', '/plain'),
      ],
      [upstream('u', url)],
    ),
  });
});
afterAll(async () => {
  await dp.close();
  up.closeAllConnections();
  up.close();
});

const post = async (path: string, body: Buffer | Readable) => {
  const r = await request(`${dp.proxyUrl}${path}`, { method: 'POST', body });
  return { status: r.statusCode, type: r.headers['content-type'], body: await r.body.text() };
};
/** A body with no Content-Length: sent chunked, in pieces of 256 bytes. */
const chunked = (bytes: number) =>
  Readable.from(
    (function* () {
      for (let sent = 0; sent < bytes; sent += 256) yield Buffer.alloc(Math.min(256, bytes - sent), 'a');
    })(),
  );

describe('request-size-limiting', () => {
  it('a Content-Length over the route limit: 413 problem+json, never proxied', async () => {
    const before = seen;
    const r = await post('/small', Buffer.alloc(1025, 'a'));
    expect(r.status).toBe(413);
    expect(r.type).toBe('application/problem+json');
    expect(JSON.parse(r.body)).toMatchObject({
      code: 'SLC_ERR_BODY_TOO_LARGE',
      detail: 'the limit is 1024 bytes',
    });
    expect(seen).toBe(before);
  });

  it('a body of exactly the limit passes, Content-Length or chunked', async () => {
    expect((await post('/small', Buffer.alloc(1024, 'a'))).status).toBe(200);
    const r = await post('/small', chunked(1024));
    expect(r.status).toBe(200);
    expect(JSON.parse(r.body)).toEqual({ bytes: 1024 });
  });

  it('a chunked body over the route limit is cut off with 413 as it streams', async () => {
    const r = await post('/small', chunked(4096));
    expect(r.status).toBe(413);
    expect(JSON.parse(r.body).code).toBe('SLC_ERR_BODY_TOO_LARGE');
  });

  it("a maxBytes over the data plane's limit changes nothing: that one holds, on routes with or without the plugin", async () => {
    expect((await post('/large', Buffer.alloc(64 * 1024 + 1, 'a'))).status).toBe(413);
    expect((await post('/large', Buffer.alloc(4096, 'a'))).status).toBe(200);
    expect((await post('/plain', Buffer.alloc(4096, 'a'))).status).toBe(200);
    expect((await post('/plain', chunked(64 * 1024 + 512))).status).toBe(413);
  });
});
