/**
 * The timeouts of an upstream try (upstream/deadlines.ts, upstream/try.ts), end to end against
 * real upstreams on loopback: the wait for the response's head (responseMs) and the idle time
 * between body chunks (idleMs), each as a short native timer (≤ 1 s) and as a deadline on the
 * ticked list (> 1 s), never early; a slow client pauses the upstream's body rather than
 * buffering it; a client that goes away mid-body cuts the upstream's response.
 */
import { once } from 'node:events';
import { request as httpRequest } from 'node:http';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DataPlane } from '../../dataplane/main.ts';
import { startTestDataPlane, startUpstream, type Upstream } from '../helpers/servers.ts';
import { route, snapshot, upstream } from '../helpers/tables.ts';

let up: Upstream;
let dp: DataPlane;
/** How many bytes of /big the upstream had written when its response closed, and whether it finished. */
const big: { written: number; finished: boolean; closed: Promise<void> | null } = {
  written: 0,
  finished: false,
  closed: null,
};
const BIG_CHUNKS = 4096;
const CHUNK = Buffer.alloc(16 * 1024, 'x');

beforeAll(async () => {
  up = await startUpstream((req, res) => {
    if (req.url?.endsWith('/silent')) return true; // never answers
    if (req.url?.endsWith('/stall')) {
      // A head and a first chunk, then nothing.
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('first');
      return true;
    }
    if (req.url?.endsWith('/trickle')) {
      // The head at once, then a chunk every 200 ms, 8 of them: 1.6 s in all, never idle for long.
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.flushHeaders();
      let n = 0;
      const t = setInterval(() => {
        res.write(`c${n}`);
        if (++n === 8) {
          clearInterval(t);
          res.end();
        }
      }, 200);
      res.on('close', () => clearInterval(t));
      return true;
    }
    if (req.url?.endsWith('/big')) {
      big.written = 0;
      big.finished = false;
      big.closed = new Promise((resolve) => res.on('close', () => resolve()));
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      let i = 0;
      const pump = () => {
        while (i < BIG_CHUNKS) {
          i++;
          big.written += CHUNK.length;
          if (!res.write(CHUNK)) return void res.once('drain', pump);
        }
        big.finished = true;
        res.end();
      };
      pump();
      return true;
    }
    return false;
  });
  dp = await startTestDataPlane({
    initialSnapshot: snapshot(
      [
        route('short', 'short', '/short'),
        route('long', 'long', '/long'),
        route('trickle', 'trickle', '/trickle'),
        route('any', 'plain', '/plain'),
      ],
      [
        upstream('short', up.url, { responseMs: 300, idleMs: 300 }),
        upstream('long', up.url, { responseMs: 1_500, idleMs: 1_500 }),
        // Idle 1 s against chunks every 200 ms: 1.6 s in all is longer than the idle bound, and a
        // loaded machine's late timers (seen: 300 ms against a 300 ms bound) do not cut it.
        upstream('trickle', up.url, { responseMs: 1_000, idleMs: 1_000 }),
        upstream('plain', up.url),
      ],
    ),
  });
});

afterAll(async () => {
  await dp?.close();
  await up?.close();
});

async function timed(path: string): Promise<{ status: number; ms: number; body: string; error?: string }> {
  const t0 = performance.now();
  const res = await request(`${dp.proxyUrl}${path}`);
  try {
    const body = await res.body.text();
    return { status: res.statusCode, ms: performance.now() - t0, body };
  } catch (err) {
    return { status: res.statusCode, ms: performance.now() - t0, body: '', error: (err as Error).message };
  }
}

describe('upstream timeouts', () => {
  it('a head that does not come in time is a 504 problem: short timeouts exactly, long ones never early', async () => {
    const short = await timed('/short/silent');
    expect(short.status).toBe(504);
    expect(JSON.parse(short.body).code).toBe('SLC_ERR_UPSTREAM_TIMEOUT');
    expect(short.ms).toBeGreaterThanOrEqual(290);
    expect(short.ms).toBeLessThan(1_000);
    const long = await timed('/long/silent');
    expect(long.status).toBe(504);
    expect(long.ms).toBeGreaterThanOrEqual(1_490);
    // Late by at most two ticks of the deadline list (500 ms each), and some scheduling.
    expect(long.ms).toBeLessThan(2_900);
  });

  it('a body that stops past idleMs cuts the response the client has started to read', async () => {
    for (const [path, min, max] of [
      ['/short/stall', 290, 1_000],
      ['/long/stall', 1_490, 2_900],
    ] as const) {
      const r = await timed(path);
      expect(r.status).toBe(200);
      expect(r.error).toBeDefined(); // the client sees the response cut, not a clean end
      expect(r.ms).toBeGreaterThanOrEqual(min);
      expect(r.ms).toBeLessThan(max);
    }
  });

  it('a body that keeps coming is never cut, however long it takes in all', async () => {
    const r = await timed('/trickle/trickle');
    expect(r).toMatchObject({ status: 200, body: 'c0c1c2c3c4c5c6c7' });
    expect(r.error).toBeUndefined();
    expect(r.ms).toBeGreaterThan(1_500);
  });

  it('a slow client pauses the upstream (backpressure), and the whole body arrives', async () => {
    const res = await request(`${dp.proxyUrl}/plain/big`);
    expect(res.statusCode).toBe(200);
    // Read nothing for a while: the upstream must stop well short of the 64 MiB body.
    await new Promise((r) => setTimeout(r, 300));
    expect(big.finished).toBe(false);
    expect(big.written).toBeLessThan(BIG_CHUNKS * CHUNK.length);
    let received = 0;
    for await (const chunk of res.body) received += (chunk as Buffer).length;
    expect(received).toBe(BIG_CHUNKS * CHUNK.length);
  });

  it('a client that goes away mid-body cuts the upstream response', async () => {
    const req = httpRequest(`${dp.proxyUrl}/plain/big`);
    req.end();
    const [res] = (await once(req, 'response')) as [import('node:http').IncomingMessage];
    expect(res.statusCode).toBe(200);
    await once(res, 'data');
    res.destroy();
    await big.closed;
    expect(big.finished).toBe(false);
    // The gateway still answers (nothing leaked or stuck).
    expect((await timed('/plain/ok')).status).toBe(200);
  });
});
