/**
 * Statuses grpc-js makes itself (dataplane/handlers/grpc/local-status.ts) against those the
 * service sends, through real servers: a grpc-js server answering raw bytes (a reply over the
 * 4 MiB receive limit; RESOURCE_EXHAUSTED sent by the service, before and after its headers,
 * one quoting the library's own text) and a node:http2 server breaking the protocol (not gRPC,
 * a reset stream, no trailers, a corrupt or oversized gzip message). Library-made: 502
 * SLC_ERR_GRPC_CALL_FAILED in the gateway's words, never the library's text; sent by the
 * service: the status's own mapping and message.
 */
import http2 from 'node:http2';
import { gzipSync } from 'node:zlib';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DataPlane } from '../../dataplane/main.ts';
import { startTestDataPlane } from '../helpers/servers.ts';
import { call, gatewayRoute, rule, snapshotOf } from './helpers.ts';

const asIs = (b: Buffer) => b;
/** The item_id of a GetItemRequest (field 1, a short string): the case the test asks for. */
const itemId = (req: Buffer) => req.subarray(2, 2 + req[1]).toString();
/** An Item whose display_name (field 2) is `n` bytes. */
function itemOfSize(n: number): Buffer {
  const len: number[] = [];
  for (let v = n; ; v >>>= 7) {
    if (v < 0x80) {
      len.push(v);
      break;
    }
    len.push((v & 0x7f) | 0x80);
  }
  return Buffer.concat([Buffer.from([0x12, ...len]), Buffer.alloc(n, 0x61)]);
}
/** A gRPC length-prefixed message frame. */
const frame = (message: Buffer, compressed = false) => {
  const head = Buffer.alloc(5);
  head[0] = compressed ? 1 : 0;
  head.writeUInt32BE(message.length, 1);
  return Buffer.concat([head, message]);
};

let grpcServer: grpc.Server;
let raw: http2.Http2Server;
let dp: DataPlane;

beforeAll(async () => {
  grpcServer = new grpc.Server();
  grpcServer.register(
    '/shop.v1.Catalog/GetItem',
    (call: grpc.ServerUnaryCall<Buffer, Buffer>, done: grpc.sendUnaryData<Buffer>) => {
      const id = itemId(call.request);
      if (id === 'big') return done(null, itemOfSize(5 * 1024 * 1024));
      if (id === 'quota')
        return done({ code: grpc.status.RESOURCE_EXHAUSTED, details: 'quota exceeded for tenant' });
      if (id === 'quota-late') {
        call.sendMetadata(new grpc.Metadata());
        return setTimeout(() => done({ code: grpc.status.RESOURCE_EXHAUSTED, details: 'slow down' }), 20);
      }
      if (id === 'spoof')
        // A service quoting the library's text in a trailers-only answer: still the service's status.
        return done({
          code: grpc.status.RESOURCE_EXHAUSTED,
          details: 'Received message larger than max (1 vs 2)',
        });
      if (id === 'internal') return done({ code: grpc.status.INTERNAL, details: 'db down' });
      done(null, itemOfSize(3));
    },
    asIs,
    asIs,
    'unary',
  );
  const grpcPort = await new Promise<number>((resolve, reject) =>
    grpcServer.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, port) =>
      err ? reject(err) : resolve(port),
    ),
  );

  // Not a gRPC server: answers what the x-case metadata asks for, each a way of breaking the protocol.
  raw = http2.createServer();
  raw.on('stream', (stream, headers) => {
    stream.on('error', () => {});
    stream.resume();
    stream.on('end', () => {
      const grpcHead = { ':status': 200, 'content-type': 'application/grpc' };
      switch (headers['x-case']) {
        case 'html-404':
          stream.respond({ ':status': 404, 'content-type': 'text/html' });
          return stream.end('<h1>404 Not Found</h1><p>nginx/1.25.3 at 10.0.0.7</p>');
        case 'reset':
          stream.respond(grpcHead);
          stream.write(frame(itemOfSize(3)).subarray(0, 4));
          return setTimeout(() => stream.close(http2.constants.NGHTTP2_INTERNAL_ERROR), 10);
        case 'no-trailers':
          stream.respond(grpcHead);
          return stream.end(frame(itemOfSize(3)));
        case 'bad-gzip':
          stream.respond({ ...grpcHead, 'grpc-encoding': 'gzip' }, { waitForTrailers: true });
          stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
          return stream.end(frame(Buffer.from('not gzip at all'), true));
        case 'gzip-bomb':
          stream.respond({ ...grpcHead, 'grpc-encoding': 'gzip' }, { waitForTrailers: true });
          stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
          return stream.end(frame(gzipSync(itemOfSize(5 * 1024 * 1024)), true));
        default:
          stream.respond(grpcHead, { waitForTrailers: true });
          stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
          return stream.end(frame(itemOfSize(3)));
      }
    });
  });
  await new Promise<void>((resolve) => raw.listen(0, '127.0.0.1', resolve));
  const rawPort = (raw.address() as { port: number }).port;

  const item = { pattern: '/x/{item_id}', requestHeaders: ['x-case'] };
  dp = await startTestDataPlane({
    initialSnapshot: snapshotOf([
      gatewayRoute('real', `http://127.0.0.1:${grpcPort}`, [
        rule('real', '/real', 'GetItem', { ...item, pattern: '/real/{item_id}' }),
      ]),
      gatewayRoute('raw', `http://127.0.0.1:${rawPort}`, [
        rule('raw', '/raw', 'GetItem', { ...item, pattern: '/raw/{item_id}' }),
      ]),
    ]),
  });
});

afterAll(async () => {
  await dp?.close();
  grpcServer?.forceShutdown();
  raw?.close();
});

/** What no answer may carry: grpc-js's own texts, and the broken upstream's. */
const LIBRARY_TEXT =
  /Received|RST_STREAM|larger than max|decompress|No status|HTTP status code|nginx|10\.0\.0\.7/;

describe("grpc: failures made by the gateway's gRPC library are 502 in its own words", () => {
  it.each([
    ['/real/big', {}, "the gRPC service's reply is larger than the gateway accepts"],
    ['/raw/x', { 'x-case': 'gzip-bomb' }, "the gRPC service's reply is larger than the gateway accepts"],
    ['/raw/x', { 'x-case': 'bad-gzip' }, "the gRPC service's reply could not be read"],
    ['/raw/x', { 'x-case': 'html-404' }, 'the service did not answer with gRPC'],
    [
      '/raw/x',
      { 'x-case': 'reset' },
      'the gRPC service broke off the call or answered outside the gRPC protocol',
    ],
    [
      '/raw/x',
      { 'x-case': 'no-trailers' },
      'the gRPC service broke off the call or answered outside the gRPC protocol',
    ],
  ])('%s %j: 502 "%s"', async (path, headers, detail) => {
    const r = await call(dp.proxyUrl, path, { headers });
    expect(r.status).toBe(502);
    expect(r.headers['content-type']).toBe('application/problem+json');
    expect(r.json).toMatchObject({ code: 'SLC_ERR_GRPC_CALL_FAILED', status: 502, detail });
    expect(r.json.grpcStatus).toBeUndefined();
    expect(r.text).not.toMatch(LIBRARY_TEXT);
  });

  it('the same upstreams answer a well-formed reply: 200', async () => {
    expect((await call(dp.proxyUrl, '/real/ok')).status).toBe(200);
    expect((await call(dp.proxyUrl, '/raw/x', { headers: { 'x-case': 'ok' } })).status).toBe(200);
  });
});

describe('grpc: statuses the service sent keep their mapping and its message', () => {
  it.each([
    ['quota', 429, 'RESOURCE_EXHAUSTED', 'quota exceeded for tenant'],
    ['quota-late', 429, 'RESOURCE_EXHAUSTED', 'slow down'],
    ['spoof', 429, 'RESOURCE_EXHAUSTED', 'Received message larger than max (1 vs 2)'],
    ['internal', 500, 'INTERNAL', 'db down'],
  ])('%s: %d %s', async (id, status, grpcStatus, detail) => {
    const r = await call(dp.proxyUrl, `/real/${id}`);
    expect(r.status).toBe(status);
    expect(r.json).toMatchObject({ code: 'SLC_ERR_GRPC_STATUS', status, grpcStatus, detail });
  });
});
