/**
 * A first execution's response is stored before the client has all of it (record-response.ts):
 * a client that has its answer and retries, through any replica, finds COMPLETED, not a 409.
 * Real parts: a private redis-server whose writes are paused (CLIENT PAUSE … WRITE, which holds
 * EVALSHA and lets reads through) while the plugin stores the response, a real upstream that
 * answers with a Content-Length, and an undici client. The store is read on another connection
 * the moment the client has the whole body.
 */
import { request } from 'undici';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DataPlane } from '../../dataplane/main.ts';
import { type PrivateRedis, startPrivateRedis } from '../helpers/redis.ts';
import { startTestDataPlane, startUpstream, type Upstream } from '../helpers/servers.ts';
import { idempotencyPlugin, route, snapshot, upstream } from '../helpers/tables.ts';

const BODY = JSON.stringify({ id: 'ch_1', amount: 100 });
const PAUSE_MS = 600;

let redis: PrivateRedis;
let admin: Redis;
let up: Upstream;
let dp: DataPlane;

beforeAll(async () => {
  redis = await startPrivateRedis();
  admin = new Redis(redis.url);
  up = await startUpstream((req, res) => {
    const chunked = req.url?.includes('chunked') ?? false;
    // The store's writes are paused while the upstream answers (the claim went through before).
    void admin.call('CLIENT', 'PAUSE', String(PAUSE_MS), 'WRITE').then(() => {
      res.writeHead(201, {
        'content-type': 'application/json',
        ...(chunked ? {} : { 'content-length': String(Buffer.byteLength(BODY)) }),
      });
      if (chunked) res.write(BODY.slice(0, 10));
      res.end(chunked ? BODY.slice(10) : BODY);
    });
    return true;
  });
  dp = await startTestDataPlane({
    redisUrl: redis.url,
    redisPrefix: 'stored-first:',
    initialSnapshot: snapshot(
      [route('charges', 'up', '/charges', { plugins: [idempotencyPlugin('idem')] })],
      [upstream('up', up.url)],
    ),
  });
});
afterAll(async () => {
  await dp?.close();
  await up?.close();
  admin?.disconnect();
  await redis?.stop();
});

/** The state of every record (not leases) in the private Redis. */
async function states(): Promise<string[]> {
  const keys = (await admin.keys('stored-first:*')).filter((k) => !k.endsWith(':lease'));
  return Promise.all(keys.map(async (k) => (await admin.hget(k, 'st')) ?? 'none'));
}

describe('the record is stored before the client has its whole response', () => {
  it.each(['content-length', 'chunked'])('%s: COMPLETED when the last byte arrives', async (framing) => {
    await admin.flushall();
    const started = performance.now();
    const res = await request(`${dp.proxyUrl}/charges?${framing}`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        authorization: 'Bearer alice',
        'idempotency-key': `stored-first-${framing}-${'k'.repeat(32)}`,
      },
      body: '{"amount":100}',
    });
    const body = await res.body.text();
    const tookMs = performance.now() - started;
    const seen = await states();
    expect(res.statusCode).toBe(201);
    expect(body).toBe(BODY);
    expect(seen).toEqual(['COMPLETED']);
    // The body waited for the pause to end: the store, not the upstream, set the pace.
    expect(tookMs).toBeGreaterThan(PAUSE_MS * 0.8);
  });
});
