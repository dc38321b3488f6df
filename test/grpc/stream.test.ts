/**
 * Server-streaming methods answered as NDJSON by a real grpc-js server: one JSON line per
 * message, an empty stream, a failure before the first message (its status as the HTTP status),
 * a failure after two lines (the response is cut: the client never sees a clean end), and the
 * client going away (the stream is cancelled on the service, nothing left open).
 */
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DataPlane } from '../../dataplane/main.ts';
import { startTestDataPlane } from '../helpers/servers.ts';
import { call, gatewayRoute, rule, snapshotOf } from './helpers.ts';
import { startGrpcServer, type TestGrpcServer } from './server.ts';

let srv: TestGrpcServer;
let dp: DataPlane;

beforeAll(async () => {
  srv = await startGrpcServer();
  dp = await startTestDataPlane({
    initialSnapshot: snapshotOf([
      gatewayRoute('watch', srv.url, [rule('watch', '/watch', 'Watch', { pattern: '/watch/{item_id}' })]),
    ]),
  });
});

afterAll(async () => {
  await dp?.close();
  await srv?.close();
});

const lines = (text: string) =>
  text
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l));

describe('grpc server streaming as NDJSON', () => {
  it('answers one proto3 JSON line per message', async () => {
    const r = await call(dp.proxyUrl, '/watch/mug?page.size=3');
    expect(r.status).toBe(200);
    expect(r.headers['content-type']).toBe('application/x-ndjson');
    expect(r.text.endsWith('\n')).toBe(true);
    expect(lines(r.text)).toEqual([
      { itemId: 'mug-0' },
      { itemId: 'mug-1', stockCount: '1' },
      { itemId: 'mug-2', stockCount: '2' },
    ]);
  });

  it('an empty stream: 200 and no lines', async () => {
    const r = await call(dp.proxyUrl, '/watch/none');
    expect(r.status).toBe(200);
    expect(r.headers['content-type']).toBe('application/x-ndjson');
    expect(r.text).toBe('');
  });

  it('a failure before the first message is answered like a unary call: its status, a problem', async () => {
    const r = await call(dp.proxyUrl, '/watch/fail-first?page.size=3');
    expect(r.status).toBe(404);
    expect(r.json).toMatchObject({
      code: 'SLC_ERR_GRPC_STATUS',
      grpcStatus: 'NOT_FOUND',
      detail: 'nothing to watch',
    });
  });

  it('a failure after two lines cuts the response: the lines arrive, the end never does', async () => {
    const r = await request(`${dp.proxyUrl}/watch/fail-after-2?page.size=5`);
    expect(r.statusCode).toBe(200);
    const got: string[] = [];
    const read = (async () => {
      for await (const chunk of r.body) got.push(String(chunk));
    })();
    await expect(read).rejects.toThrow();
    expect(lines(got.join(''))).toEqual([
      { itemId: 'fail-after-2-0' },
      { itemId: 'fail-after-2-1', stockCount: '1' },
    ]);
  });

  it('many messages with a slow reader: every line arrives, in order', async () => {
    const r = await request(`${dp.proxyUrl}/watch/big?page.size=20000`);
    expect(r.statusCode).toBe(200);
    let text = '';
    for await (const chunk of r.body) {
      text += String(chunk);
      await new Promise((resolve) => setImmediate(resolve));
    }
    const all = lines(text);
    expect(all).toHaveLength(20000);
    expect(all[19999]).toEqual({ itemId: 'big-19999', stockCount: '19999' });
  });

  it('the client going away cancels the stream on the service', async () => {
    const r = await request(`${dp.proxyUrl}/watch/slow`);
    expect(r.statusCode).toBe(200);
    for await (const chunk of r.body) {
      expect(String(chunk)).toContain('slow-0');
      break; // leaving the loop destroys the body: the connection is closed
    }
    for (let i = 0; i < 100 && !srv.cancelled.Watch; i++)
      await new Promise((resolve) => setTimeout(resolve, 20));
    expect(srv.cancelled.Watch).toBe(1);
  });
});
