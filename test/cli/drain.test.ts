/**
 * Draining as load balancers expect, on real `sluice run` processes (one process, and a cluster
 * of two workers): on SIGTERM /readyz answers 503 at once (saying draining) while /healthz stays
 * 200, the request in flight completes (then its connection is closed), idle keep-alive connections are
 * closed at once, an open WebSocket is closed with 1001, and the process exits as soon as nothing
 * is in flight, far before its 30 s drain timeout.
 */
import { once } from 'node:events';
import { connect } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SluiceProcess, startSluice } from '../helpers/processes.ts';
import WebSocket from 'ws';
import { startUpstream, type Upstream } from '../helpers/servers.ts';
import { startWsUpstream } from '../helpers/ws-upstream.ts';

const SLOW_MS = 1_500;
const DRAIN = ['--drain-timeout-ms', '30000'];
let up: Upstream;

const yaml = () =>
  `apiVersion: sluice.dev/v1alpha1
kind: GatewayRoute
metadata: { name: drain, namespace: default }
spec:
  service: { name: drain, url: "${up.url}" }
  routes:
    - name: all
      paths: ["/"]
`;

beforeAll(async () => {
  up = await startUpstream((req, res) => {
    if (req.url !== '/slow') return false;
    setTimeout(() => res.writeHead(200, { 'content-type': 'text/plain' }).end('finished'), SLOW_MS);
    return true;
  });
});
afterAll(async () => {
  await up?.close();
});

const admin = async (gw: SluiceProcess, path: string) => {
  const r = await request(`${gw.adminUrl}${path}`);
  return { status: r.statusCode, body: await r.body.text() };
};

/** SIGTERM with one slow request in flight: readiness, health, the request, the exit. */
async function drainWithOneInFlight(gw: SluiceProcess): Promise<void> {
  const client = new Agent({ keepAliveTimeout: 60_000 });
  try {
    const inflight = request(`${gw.proxyUrl}/slow`, { dispatcher: client }).then(async (r) => ({
      status: r.statusCode,
      body: await r.body.text(),
      at: Date.now(),
    }));
    // The request has reached the upstream: it is in flight.
    await expect.poll(() => up.seen.filter((s) => s.url === '/slow').length, { timeout: 5_000 }).toBe(1);
    gw.process.kill('SIGTERM');
    const exited = gw.exited.then((e) => ({ ...e, at: Date.now() }));
    // At once: not ready (saying why), still healthy.
    await expect.poll(async () => (await admin(gw, '/readyz')).status, { timeout: 1_000 }).toBe(503);
    const ready = await admin(gw, '/readyz');
    expect(JSON.parse(ready.body)).toMatchObject({ code: 'SLC_ERR_DRAINING', status: 503 });
    expect(ready.body).toContain('draining');
    expect((await admin(gw, '/healthz')).status).toBe(200);
    // The request in flight completes.
    const answer = await inflight;
    expect(answer).toMatchObject({ status: 200, body: 'finished' });
    // Then its kept-alive connection is closed and the process goes, soon after (the drain
    // timeout is 30 s: a connection left open would hold it that long).
    const end = await exited;
    expect(end.code).toBe(0);
    expect(end.at - answer.at).toBeLessThan(5_000);
  } finally {
    await client.destroy();
  }
}

/** SIGTERM with only idle kept-alive connections: they are closed and the process exits at once. */
async function drainIdle(gw: SluiceProcess): Promise<void> {
  // Kept-alive connections, idle: undici's and a raw one.
  const client = new Agent({ keepAliveTimeout: 60_000, connections: 4 });
  try {
    await Promise.all(
      Array.from({ length: 4 }, async () =>
        (await request(`${gw.proxyUrl}/fast`, { dispatcher: client })).body.text(),
      ),
    );
    const raw = connect(gw.proxyPort, '127.0.0.1');
    await once(raw, 'connect');
    raw.write('GET /fast HTTP/1.1\r\nHost: x\r\n\r\n');
    await once(raw, 'data');
    const rawClosed = once(raw, 'close');
    raw.on('error', () => {});
    const t0 = Date.now();
    gw.process.kill('SIGTERM');
    const end = await gw.exited;
    expect(end.code).toBe(0);
    // ~1 s on a quiet machine; the bound is generous, and far below the 30 s drain timeout.
    expect(Date.now() - t0).toBeLessThan(5_000);
    await rawClosed;
  } finally {
    await client.destroy();
  }
}

describe('draining on SIGTERM (one process)', () => {
  it('readyz 503 at once, healthz 200, the request in flight completes, then the process exits', async () => {
    up.seen.length = 0;
    const gw = await startSluice({ yaml: yaml(), args: DRAIN });
    try {
      await drainWithOneInFlight(gw);
    } finally {
      await gw.stop();
    }
  });

  it('a request arriving on a kept-alive connection while draining is answered with Connection: close', async () => {
    up.seen.length = 0;
    const gw = await startSluice({ yaml: yaml(), args: DRAIN });
    try {
      const socket = connect(gw.proxyPort, '127.0.0.1');
      await once(socket, 'connect');
      let text = '';
      socket.setEncoding('utf8').on('data', (d: string) => {
        text += d;
      });
      const closed = once(socket, 'close');
      socket.write('GET /slow HTTP/1.1\r\nHost: x\r\n\r\n');
      await expect.poll(() => up.seen.length, { timeout: 5_000 }).toBe(1);
      gw.process.kill('SIGTERM');
      await expect.poll(async () => (await admin(gw, '/readyz')).status, { timeout: 1_000 }).toBe(503);
      // The next request on the same connection (behind the slow one): served, then the connection ends.
      socket.write('GET /fast HTTP/1.1\r\nHost: x\r\n\r\n');
      await closed;
      const replies = text.split(/(?=HTTP\/1\.1 )/);
      expect(replies).toHaveLength(2);
      expect(replies[0]).toMatch(/^HTTP\/1\.1 200/);
      expect(replies[0]).toContain('finished');
      expect(replies[1]).toMatch(/^HTTP\/1\.1 200/);
      expect(replies[1].toLowerCase()).toContain('connection: close');
      expect((await gw.exited).code).toBe(0);
    } finally {
      await gw.stop();
    }
  });

  it('an open WebSocket is closed with 1001 (going away) on both sides, and does not hold the process', async () => {
    const wsUp = await startWsUpstream();
    const gw = await startSluice({
      yaml: yaml().replace(`url: "${up.url}"`, `url: "${wsUp.url}"`),
      args: DRAIN,
    });
    try {
      const ws = new WebSocket(`${gw.proxyUrl.replace('http', 'ws')}/chat`);
      await once(ws, 'open');
      ws.send('hi');
      expect(String((await once(ws, 'message'))[0])).toBe('echo:hi');
      const closed = once(ws, 'close');
      const t0 = Date.now();
      gw.process.kill('SIGTERM');
      const [code] = (await closed) as [number];
      expect(code).toBe(1001);
      expect((await gw.exited).code).toBe(0);
      expect(Date.now() - t0).toBeLessThan(5_000); // the drain timeout is 30 s
      await expect.poll(() => wsUp.closes, { timeout: 2_000 }).toEqual([1001]);
    } finally {
      await gw.stop();
      await wsUp.close();
    }
  });

  it('with only idle keep-alive connections: exits within about a second', async () => {
    const gw = await startSluice({ yaml: yaml(), args: DRAIN });
    try {
      await drainIdle(gw);
    } finally {
      await gw.stop();
    }
  });

  // Requests whose clients go away while draining end as cancelled ones, and the process still
  // exits 0 once none is left (not at the drain timeout, and without an error).
  it('clients that hang up while their requests are in flight: the process still exits 0', async () => {
    const gw = await startSluice({ yaml: yaml(), args: DRAIN });
    try {
      const before = up.seen.filter((s) => s.url === '/slow').length;
      const sockets = Array.from({ length: 5 }, () => {
        const s = connect(gw.proxyPort, '127.0.0.1');
        s.on('error', () => {});
        s.write('GET /slow HTTP/1.1\r\nhost: x\r\n\r\n');
        return s;
      });
      await expect
        .poll(() => up.seen.filter((s) => s.url === '/slow').length - before, { timeout: 5_000 })
        .toBe(5);
      gw.process.kill('SIGTERM');
      for (const s of sockets) s.destroy();
      const end = await gw.exited;
      expect(gw.stderr()).not.toContain('TypeError');
      expect(end).toEqual({ code: 0, signal: null });
    } finally {
      await gw.stop();
    }
  });
});

describe('draining on SIGTERM (--workers 2: the primary drains its workers)', () => {
  it('readyz 503 at once, healthz 200, the request in flight completes, then the process exits', async () => {
    up.seen.length = 0;
    const gw = await startSluice({ yaml: yaml(), args: [...DRAIN, '--workers', '2'] });
    try {
      await drainWithOneInFlight(gw);
    } finally {
      await gw.stop();
    }
  });

  it('with only idle keep-alive connections: exits within about a second', async () => {
    const gw = await startSluice({ yaml: yaml(), args: [...DRAIN, '--workers', '2'] });
    try {
      await sleep(100);
      await drainIdle(gw);
    } finally {
      await gw.stop();
    }
  });
});
