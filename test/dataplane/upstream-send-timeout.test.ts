/**
 * The upstream's send timeout (timeouts.sendMs, upstream/send-timeout.ts: nginx's
 * proxy_send_timeout) end to end on loopback: an upstream that stops taking a streamed request
 * body is cut after sendMs with 504, long before the response timeout; a client that sends its
 * body slowly, with pauses longer than sendMs, to an upstream that reads it, is not cut.
 */
import { once } from 'node:events';
import { createServer, type IncomingMessage, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DataPlane } from '../../dataplane/main.ts';
import { startTestDataPlane } from '../helpers/servers.ts';
import { route, snapshot, upstream } from '../helpers/tables.ts';

let up: Server;
let dp: DataPlane;
/** Requests to /stuck the upstream got (it never reads their bodies). */
const stuck: IncomingMessage[] = [];

beforeAll(async () => {
  up = createServer((req, res) => {
    if (req.url === '/stuck') {
      req.pause(); // takes none of the body: the gateway's writes back up
      stuck.push(req);
      return;
    }
    let n = 0;
    req.on('data', (c: Buffer) => {
      n += c.length;
    });
    req.on('end', () => res.end(`got ${n}`));
  });
  up.listen(0, '127.0.9.1');
  await once(up, 'listening');
  const url = `http://127.0.9.1:${(up.address() as AddressInfo).port}`;
  dp = await startTestDataPlane({
    host: '127.0.9.2',
    initialSnapshot: snapshot(
      [route('send', 'send', '/')],
      [upstream('send', url, { responseMs: 20_000, idleMs: 20_000, sendMs: 400 })],
    ),
  });
});

afterAll(async () => {
  for (const r of stuck) r.destroy();
  await dp?.close();
  up?.closeAllConnections();
  await new Promise((r) => up?.close(r));
});

/** POSTs `chunks` of `size` bytes, `gapMs` apart (0: as fast as the connection takes them). */
async function post(path: string, chunks: number, size: number, gapMs: number) {
  const t0 = performance.now();
  const req = httpRequest(`${dp.proxyUrl}${path}`, { method: 'POST' });
  req.on('error', () => {}); // the gateway may close while the body still goes
  const answered = once(req, 'response') as Promise<[IncomingMessage]>;
  const chunk = Buffer.alloc(size, 'x');
  let stop = false;
  answered.then(() => {
    stop = true;
  });
  (async () => {
    for (let i = 0; i < chunks && !stop; i++) {
      if (!req.write(chunk)) await Promise.race([once(req, 'drain'), answered]);
      if (gapMs) await new Promise((r) => setTimeout(r, gapMs));
    }
    if (!stop) req.end();
  })();
  const [res] = await answered;
  let body = '';
  for await (const c of res) body += c;
  return { status: res.statusCode, body, ms: performance.now() - t0 };
}

describe('upstream send timeout', () => {
  it('an upstream that takes none of a streamed body is cut after sendMs: 504, not the 20 s response timeout', async () => {
    // 256 MiB offered: far more than the socket buffers between the gateway and the upstream.
    const r = await post('/stuck', 4096, 64 * 1024, 0);
    expect(r.status).toBe(504);
    expect(JSON.parse(r.body).code).toBe('SLC_ERR_UPSTREAM_TIMEOUT');
    expect(stuck.length).toBe(1);
    expect(r.ms).toBeGreaterThanOrEqual(400);
    expect(r.ms).toBeLessThan(8_000);
  });

  it('a slow client is not the upstream being slow: pauses of 600 ms between chunks (sendMs 400) are served', async () => {
    const r = await post('/reads', 4, 1024, 600);
    expect(r).toMatchObject({ status: 200, body: 'got 4096' });
    expect(r.ms).toBeGreaterThan(1_800);
  });
});
