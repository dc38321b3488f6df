/**
 * gRPC proxied end to end over HTTP/2 (GATEWAY-GRPC): a real @grpc/grpc-js client calls, with
 * prior-knowledge h2c, a Gateway HTTP listener port of a real data plane, whose proxy route sends
 * the call to a real @grpc/grpc-js server behind an upstream of protocol h2c. Unary, server,
 * client and bidirectional streaming, a status and message in trailers (after messages, and
 * trailers-only), metadata both ways, a deadline, a cancelled call cancelling the upstream's
 * without stalling the others on the upstream's session, the access log's line; and an
 * HTTP/1.1 client on the fixed proxy port (which speaks HTTP/1.1 only, so gRPC clients use a
 * listener port or TLS) getting the trailers as chunked trailers when its TE names them.
 */
import * as grpc from '@grpc/grpc-js';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Upstream } from '../../dataplane/config/route-table.ts';
import type { DataPlane } from '../../dataplane/main.ts';
import { untilPort } from '../helpers/listeners.ts';
import { capturedLog, freePort, startTestDataPlane } from '../helpers/servers.ts';
import { listener, route, snapshot, upstream } from '../helpers/tables.ts';
import { until } from '../helpers/until.ts';
import { catalogClient, startGrpcServer, type TestGrpcServer } from './server.ts';

let srv: TestGrpcServer;
let dp: DataPlane;
let client: grpc.Client;
let port: number;
const log = capturedLog();

const h2c = (id: string, url: string): Upstream => ({ ...upstream(id, url), protocol: 'h2c' });

beforeAll(async () => {
  srv = await startGrpcServer();
  port = await freePort();
  dp = await startTestDataPlane({
    accessLog: true,
    log: log.log,
    initialSnapshot: snapshot(
      [
        route('grpc', 'catalog', '/shop.v1.Catalog', { listeners: ['listener/test/gw/grpc'] }),
        route('fixed', 'catalog', '/shop.v1.Catalog'),
      ],
      [h2c('catalog', srv.url)],
      { listeners: [listener('grpc', port)] },
    ),
  });
  await untilPort(dp, port);
  client = catalogClient(`127.0.0.1:${port}`);
});

afterAll(async () => {
  client?.close();
  await dp?.close();
  await srv?.close();
});

type Rec = Record<string, unknown>;
type Method = (...args: unknown[]) => grpc.ClientUnaryCall;
const method = (name: string) => (client as unknown as Record<string, Method>)[name].bind(client);

/** A unary call: its answer, or its error (a grpc ServiceError), and the call's initial metadata. */
function unary(name: string, req: Rec, metadata = new grpc.Metadata(), options: grpc.CallOptions = {}) {
  return new Promise<{ res?: Rec; err?: grpc.ServiceError; head?: grpc.Metadata; trailer?: grpc.Metadata }>(
    (resolve) => {
      let head: grpc.Metadata | undefined;
      let trailer: grpc.Metadata | undefined;
      const call = method(name)(req, metadata, options, (err: grpc.ServiceError | null, res: Rec) =>
        // The status (and its trailers) comes after the callback's answer: wait for it.
        setImmediate(() => resolve({ res: err ? undefined : res, err: err ?? undefined, head, trailer })),
      );
      call.on('metadata', (m: grpc.Metadata) => {
        head = m;
      });
      call.on('status', (s: grpc.StatusObject) => {
        trailer = s.metadata;
      });
    },
  );
}

/** A server-streaming call read to its end: the messages, then the status. */
function serverStream(name: string, req: Rec) {
  return new Promise<{ items: Rec[]; status: grpc.StatusObject }>((resolve) => {
    const items: Rec[] = [];
    const call = method(name)(req) as unknown as grpc.ClientReadableStream<Rec>;
    call.on('data', (m: Rec) => items.push(m));
    call.on('error', () => {});
    call.on('status', (status: grpc.StatusObject) => resolve({ items, status }));
  });
}

describe('gRPC through an h2c upstream', () => {
  it('a unary call: the answer, decoded as the server sent it', async () => {
    const { res, err } = await unary('GetItem', { item_id: 'mug', with_tags: true });
    expect(err).toBeUndefined();
    expect(res).toMatchObject({
      item_id: 'mug',
      display_name: 'Blue mug',
      price: { currency_code: 'EUR', units: '9007199254740993' },
      tags: ['kitchen', 'blue'],
    });
  });

  it('server streaming: every message, then OK', async () => {
    const { items, status } = await serverStream('Watch', { item_id: 'mug', page: { size: 3 } });
    expect(items.map((i) => i.item_id)).toEqual(['mug-0', 'mug-1', 'mug-2']);
    expect(status.code).toBe(grpc.status.OK);
  });

  it('client streaming: the messages the client streamed reach the server, one answer comes back', async () => {
    const answer = await new Promise<Rec>((resolve, reject) => {
      const call = method('Tally')((err: grpc.ServiceError | null, res: Rec) =>
        err ? reject(err) : resolve(res),
      ) as unknown as grpc.ClientWritableStream<Rec>;
      for (const id of ['a', 'b', 'c']) call.write({ item_id: id });
      call.end();
    });
    expect(answer).toMatchObject({ item_id: 'a,b,c', stock_count: '3' });
  });

  it('both ways at once: each message is answered before the next is sent (nothing waits for an end)', async () => {
    const call = method('Chat')() as unknown as grpc.ClientDuplexStream<Rec, Rec>;
    const got: string[] = [];
    for (const id of ['one', 'two', 'three']) {
      const next = new Promise<Rec>((resolve) => call.once('data', resolve));
      call.write({ item_id: id });
      // The server answers a message as it comes: with either way buffered to its end, this never resolves.
      got.push(String((await next).item_id));
    }
    const status = new Promise<grpc.StatusObject>((resolve) => call.on('status', resolve));
    call.end();
    expect(got).toEqual(['echo-one', 'echo-two', 'echo-three']);
    expect((await status).code).toBe(grpc.status.OK);
  });

  it('a status and its message with no message before them (trailers-only) reach the client', async () => {
    const { err } = await unary('Fail', { code: grpc.status.NOT_FOUND, message: 'no shelf "x"' });
    expect(err?.code).toBe(grpc.status.NOT_FOUND);
    expect(err?.details).toBe('no shelf "x"');
    const missing = await unary('GetItem', { item_id: 'missing' });
    expect(missing.err?.code).toBe(grpc.status.NOT_FOUND);
    expect(missing.err?.details).toBe('no item "missing"');
  });

  it('a status after messages (in trailers) reaches the client after the messages', async () => {
    const { items, status } = await serverStream('Watch', { item_id: 'fail-after-2', page: { size: 5 } });
    expect(items.map((i) => i.item_id)).toEqual(['fail-after-2-0', 'fail-after-2-1']);
    expect(status.code).toBe(grpc.status.UNAVAILABLE);
    expect(status.details).toBe('lost the feed');
  });

  it('metadata both ways: the request metadata reaches the server; its headers and trailers reach the client', async () => {
    const md = new grpc.Metadata();
    md.set('x-tenant', 'acme');
    md.set('x-trace-bin', Buffer.from([1, 2, 3]));
    const { res, err, head, trailer } = await unary('Echo', { item_id: 'e1' }, md);
    expect(err).toBeUndefined();
    expect(res).toMatchObject({ item_id: 'e1' });
    expect(srv.metadata.Echo.get('x-tenant')).toEqual(['acme']);
    expect(srv.metadata.Echo.get('x-trace-bin')).toEqual([Buffer.from([1, 2, 3])]);
    expect(head?.get('x-served-by')).toEqual(['catalog-1']);
    expect(trailer?.get('x-cost')).toEqual(['acme']);
  });

  it("a deadline: the client gets DEADLINE_EXCEEDED and the server's call is cancelled", async () => {
    const before = srv.cancelled.Slow ?? 0;
    const { err } = await unary('Slow', { ms: 5_000 }, new grpc.Metadata(), {
      deadline: Date.now() + 300,
    });
    expect(err?.code).toBe(grpc.status.DEADLINE_EXCEEDED);
    await until(() => (srv.cancelled.Slow ?? 0) === before + 1, 3_000);
  });

  it("a cancelled call cancels the upstream's, and the calls beside it on the same session go on", async () => {
    const before = srv.cancelled.Watch ?? 0;
    const open = () => {
      const call = method('Watch')({ item_id: 'slow' }) as unknown as grpc.ClientReadableStream<Rec>;
      const items: Rec[] = [];
      call.on('data', (m: Rec) => items.push(m));
      const status = new Promise<grpc.StatusObject>((resolve) => call.on('status', resolve));
      call.on('error', () => {});
      return { call, items, status };
    };
    const calls = [open(), open(), open(), open()];
    await until(() => calls.every((c) => c.items.length >= 2), 5_000);
    calls[0].call.cancel();
    calls[2].call.cancel();
    expect((await calls[0].status).code).toBe(grpc.status.CANCELLED);
    expect((await calls[2].status).code).toBe(grpc.status.CANCELLED);
    await until(() => (srv.cancelled.Watch ?? 0) === before + 2, 3_000);
    // The two left keep streaming, and new calls go through.
    const seen = calls[1].items.length;
    await until(() => calls[1].items.length > seen + 2 && calls[3].items.length > seen + 2, 3_000);
    expect((await unary('GetItem', { item_id: 'after' })).res).toMatchObject({ item_id: 'after' });
    calls[1].call.cancel();
    calls[3].call.cancel();
    await until(() => (srv.cancelled.Watch ?? 0) === before + 4, 3_000);
  });

  it('many cancelled calls in a row leave the upstream session usable', async () => {
    for (let i = 0; i < 30; i++) {
      const call = method('Slow')({ ms: 5_000 }, () => {}) as grpc.ClientUnaryCall;
      call.on('error', () => {});
      await new Promise((r) => setTimeout(r, 2));
      call.cancel();
    }
    const answers = await Promise.all(
      Array.from({ length: 10 }, (_, i) => unary('GetItem', { item_id: `n${i}` })),
    );
    expect(answers.map((a) => a.res?.item_id)).toEqual(Array.from({ length: 10 }, (_, i) => `n${i}`));
  });

  it("the access log has the call's line: its path, status and the upstream", async () => {
    await unary('GetItem', { item_id: 'logged' });
    await until(() => log.text().includes('/shop.v1.Catalog/GetItem'), 3_000);
    const line = log
      .text()
      .split('\n')
      .filter((l) => l.includes('/shop.v1.Catalog/GetItem'))
      .map((l) => JSON.parse(l))
      .at(-1);
    expect(line).toMatchObject({ status: 200, upstream: srv.url });
  });
});

/** A gRPC message on the wire: uncompressed, its length, its bytes. */
const frame = (bytes: number[]) => Buffer.from([0, 0, 0, 0, bytes.length, ...bytes]);
/** GetItemRequest { item_id: "mug" } */
const GET_MUG = [0x0a, 3, ...Buffer.from('mug')];

describe('an HTTP/1.1 client to an h2c gRPC upstream (the fixed proxy port)', () => {
  const post = (headers: Record<string, string>) =>
    request(`${dp.proxyUrl}/shop.v1.Catalog/GetItem`, {
      method: 'POST',
      headers: { 'content-type': 'application/grpc', ...headers },
      body: frame(GET_MUG),
    });

  it('gets the answer, and the trailers as chunked trailers when its TE names them', async () => {
    const r = await post({ te: 'trailers' });
    const body = Buffer.from(await r.body.arrayBuffer());
    expect(r.statusCode).toBe(200);
    expect(r.headers['content-type']).toMatch(/^application\/grpc/);
    expect(body.subarray(0, 1)[0]).toBe(0);
    expect(body.subarray(5).toString('latin1')).toContain('Blue mug');
    expect(r.trailers['grpc-status']).toBe('0');
  });

  it("gets no trailers when its TE does not name them (the upstream's status is dropped, the body is not)", async () => {
    const r = await post({});
    const body = Buffer.from(await r.body.arrayBuffer());
    expect(r.statusCode).toBe(200);
    expect(body.subarray(5).toString('latin1')).toContain('Blue mug');
    expect(r.trailers).toEqual({});
  });
});
