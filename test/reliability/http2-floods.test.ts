/**
 * HTTP/2 floods against the TLS listener (h2 by ALPN) of one gateway, each while another client
 * keeps using it:
 *  - rapid reset (CVE-2023-44487): node:http2 opens streams on a slow route (the upstream
 *    answers after 2 s) and cancels each at once (RST_STREAM), 5 storms of 200 on one
 *    connection: the connection gets GOAWAY or is closed; 1 s later few upstream requests are
 *    still open (the cancels reached them); another client's request answers at once;
 *  - CONTINUATION flood (CVE-2024-27983 class), raw frames over TLS: a HEADERS frame without
 *    END_HEADERS followed by CONTINUATION frames without end; 5 s of such connections, a new one
 *    as soon as the gateway closes the last: every one closed, the gateway's memory bounded;
 *  - SETTINGS flood: SETTINGS frames as fast as the socket takes them, their ACKs never read,
 *    5 s of such connections: the gateway keeps serving others, its memory stays bounded.
 * Printed per flood: what the flooding connection saw (GOAWAY code, close, bytes or frames sent),
 * the other client's statuses and worst latency, the gateway's RSS before and at most.
 */
import { type ClientHttp2Session, connect as h2connect, constants } from 'node:http2';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rssBytes, type SluiceProcess, startSluice } from '../helpers/processes.ts';
import { CONTINUATION, frame, HEADERS, literal, type Raw, rawH2, SETTINGS } from '../helpers/raw-h2.ts';
import { freePort, startUpstream, type Upstream } from '../helpers/servers.ts';
import { type Leaf, makePki, type Pki } from '../tls/pki.ts';

const SLOW_MS = 2_000;
/** How long the CONTINUATION and SETTINGS floods last (new connections as the gateway closes them). */
const FLOOD_MS = 5_000;
/**
 * The least a flooding connection floods, the last one too: one opened a moment before FLOOD_MS
 * ends would otherwise send a frame or two, too little to be closed for, and count as not closed.
 */
const LAST_FLOOD_MS = 1_000;
const MiB = (b: number) => Math.round(b / 2 ** 20);
/** Memory a flood may add to the gateway: generous, but far below what an unbounded buffer reaches. */
const RSS_BOUND = 150 * 2 ** 20;

const yaml = (port: number) => `
apiVersion: sluice.dev/v1alpha1
kind: GatewayRoute
metadata: { name: api }
spec:
  service: { name: up, url: "http://127.0.0.1:${port}" }
  routes:
    - { name: api, paths: ["/"] }
`;

/** Writes `next()` frames until the connection closes or `ms` pass, waiting for 'drain' (bounded). */
async function flood(
  raw: Raw,
  next: () => Buffer,
  ms: number,
): Promise<{ bytes: number; frames: number; stalled: boolean }> {
  const until = performance.now() + ms;
  let bytes = 0;
  let frames = 0;
  let stalled = false;
  while (!raw.closed && performance.now() < until) {
    const f = next();
    bytes += f.length;
    frames++;
    if (!raw.socket.write(f)) {
      // The server stopped reading (TCP window full): a bound of its own, not a failure.
      if (!(await drainedOrClosed(raw, until - performance.now()))) stalled = true;
    }
  }
  return { bytes, frames, stalled };
}

/** Whether the socket drained (or closed) within `ms`; its listeners go either way (one per stall would pile up). */
function drainedOrClosed(raw: Raw, ms: number): Promise<boolean> {
  return new Promise((resolve) => {
    const done = (drained: boolean) => {
      clearTimeout(timer);
      raw.socket.off('drain', yes).off('close', yes);
      resolve(drained);
    };
    const yes = () => done(true);
    const timer = setTimeout(() => done(false), Math.max(0, ms));
    raw.socket.once('drain', yes).once('close', yes);
  });
}

/**
 * Flooding connections one after another for `ms`: each gets the preface, then `frames()`'s
 * frames until the gateway closes it (or the time is up). What they saw, summed.
 */
async function floodConnections(
  port: number,
  ca: string,
  ms: number,
  frames: () => () => Buffer,
  opts: { read: boolean },
) {
  const until = performance.now() + ms;
  const seen = {
    connections: 0,
    closed: 0,
    goaway: new Map<number, number>(),
    frames: 0,
    bytes: 0,
    stalled: 0,
    lifeMs: [] as number[],
  };
  while (performance.now() < until) {
    const raw = await rawH2(port, ca);
    if (!opts.read) raw.socket.pause(); // never read: what the gateway sends piles up on its side
    const t = performance.now();
    // One opened near the end floods on as the others did: time for the gateway to close it.
    const sent = await flood(raw, frames(), Math.max(until - performance.now(), LAST_FLOOD_MS));
    await sleep(100);
    seen.connections++;
    seen.frames += sent.frames;
    seen.bytes += sent.bytes;
    if (sent.stalled) seen.stalled++;
    if (raw.closed) {
      seen.closed++;
      seen.lifeMs.push(raw.closedAt - t);
    }
    if (raw.goaway !== null) seen.goaway.set(raw.goaway, (seen.goaway.get(raw.goaway) ?? 0) + 1);
    raw.socket.destroy();
  }
  const life = seen.lifeMs.length ? `${Math.round(Math.max(...seen.lifeMs))} ms at most` : '-';
  return {
    ...seen,
    line: () =>
      `${seen.connections} flooding connections, ${seen.frames} frames, ${MiB(seen.bytes)} MiB sent; closed by the gateway ${seen.closed} ` +
      `(lived ${life}), GOAWAY ${[...seen.goaway].map(([c, n]) => `code ${c}×${n}`).join(' ') || 'none'}` +
      `${seen.stalled ? `, ${seen.stalled} stopped being read` : ''}`,
  };
}

/** Another client on its own h2 connection: one GET every 50 ms, statuses and latencies. */
function bystander(origin: string, ca: string) {
  const session = h2connect(origin, { ca, servername: 'localhost' });
  session.on('error', () => {});
  const statuses = new Map<number, number>();
  const ms: number[] = [];
  let stop = false;
  const run = (async () => {
    while (!stop) {
      const t = performance.now();
      const status = await new Promise<number>((resolve) => {
        const req = session.request({ ':path': '/fast' });
        req.setTimeout(10_000, () => req.close(constants.NGHTTP2_CANCEL));
        let s = 0;
        req.on('response', (h) => {
          s = Number(h[':status']);
        });
        req.on('close', () => resolve(s));
        req.on('error', () => {});
        req.resume();
        req.end();
      });
      ms.push(performance.now() - t);
      statuses.set(status, (statuses.get(status) ?? 0) + 1);
      await sleep(50);
    }
  })();
  return {
    statuses,
    ms,
    async stop() {
      stop = true;
      await run;
      session.close();
    },
    line: () =>
      `other client ${[...statuses].map(([s, n]) => `${s || 'err'}×${n}`).join(' ')}, worst ${Math.round(Math.max(...ms))} ms`,
  };
}

describe('HTTP/2 floods on the TLS listener', () => {
  let pki: Pki;
  let leaf: Leaf;
  let up: Upstream;
  let gw: SluiceProcess;
  let origin: string;
  let upstreamOpen = 0;
  beforeAll(async () => {
    pki = makePki();
    leaf = pki.leaf('localhost', ['localhost']);
    up = await startUpstream((req, res) => {
      if (!req.url?.startsWith('/slow')) return false;
      upstreamOpen++;
      const timer = setTimeout(() => res.end('slow'), SLOW_MS);
      res.on('close', () => {
        upstreamOpen--;
        clearTimeout(timer);
      });
      return true;
    });
    const httpsPort = await freePort();
    gw = await startSluice({
      yaml: yaml(up.port),
      args: [
        '--https-port',
        String(httpsPort),
        '--tls-default-cert',
        leaf.certFile,
        '--tls-default-key',
        leaf.keyFile,
      ],
    });
    // Every client connects to 127.0.0.1 and sends SNI "localhost", the certificate's name.
    origin = `https://127.0.0.1:${httpsPort}`;
  });
  afterAll(async () => {
    await gw?.stop();
    await up?.close();
    pki?.remove();
  });
  const httpsPort = () => Number(new URL(origin).port);

  it('rapid reset: GOAWAY or closed; the cancels reach the upstream; others answered at once', async () => {
    const rssBefore = rssBytes(gw.process.pid)!;
    let rssMax = rssBefore;
    const other = bystander(origin, pki.ca);
    const session: ClientHttp2Session = h2connect(origin, { ca: pki.ca, servername: 'localhost' });
    let goaway: number | null = null;
    let closed = false;
    session.on('goaway', (code) => {
      goaway = code;
    });
    session.on('close', () => {
      closed = true;
    });
    session.on('error', () => {});
    await new Promise((r) => session.once('connect', r));
    let opened = 0;
    const openAfter: number[] = [];
    for (let storm = 0; storm < 5 && !closed; storm++) {
      for (let i = 0; i < 200 && !closed && !session.destroyed; i++) {
        try {
          const req = session.request({ ':path': `/slow/${storm}/${i}` });
          req.on('error', () => {});
          req.close(constants.NGHTTP2_CANCEL);
          opened++;
        } catch {
          break; // the session is going away
        }
      }
      await sleep(1_000);
      openAfter.push(upstreamOpen);
      rssMax = Math.max(rssMax, rssBytes(gw.process.pid) ?? 0);
    }
    const t = performance.now();
    const fresh = h2connect(origin, { ca: pki.ca, servername: 'localhost' });
    fresh.on('error', () => {});
    const status = await new Promise<number>((resolve) => {
      const req = fresh.request({ ':path': '/fast' });
      req.on('response', (h) => resolve(Number(h[':status'])));
      req.on('error', () => resolve(0));
      req.resume();
      req.end();
    });
    const freshMs = performance.now() - t;
    fresh.close();
    session.destroy();
    await other.stop();
    console.log(
      `[http2 rapid reset] ${opened} streams opened and reset at once (${openAfter.length} storms of up to 200 on one connection, until it was closed); ` +
        `connection: ${goaway === null ? 'no GOAWAY' : `GOAWAY code ${goaway}`}, ${closed ? 'closed' : 'still open'}; ` +
        `upstream requests still open 1 s after each storm: ${openAfter.join(' ')}; ` +
        `a new client's request: ${status} in ${Math.round(freshMs)} ms; ${other.line()}; ` +
        `gateway RSS ${MiB(rssBefore)} → max ${MiB(rssMax)} MiB`,
    );
    expect(goaway !== null || closed).toBe(true);
    expect(Math.max(...openAfter)).toBeLessThanOrEqual(10);
    expect(status).toBe(200);
    expect(freshMs).toBeLessThan(SLOW_MS);
    expect([...other.statuses.keys()]).toEqual([200]);
  }, 60_000);

  it('CONTINUATION flood: every flooding connection is closed, others served, memory bounded', async () => {
    const rssBefore = rssBytes(gw.process.pid)!;
    let rssMax = rssBefore;
    const sampler = setInterval(() => {
      rssMax = Math.max(rssMax, rssBytes(gw.process.pid) ?? 0);
    }, 100);
    const other = bystander(origin, pki.ca);
    const first = Buffer.concat([
      literal(':method', 'GET'),
      literal(':scheme', 'https'),
      literal(':path', '/fast'),
      literal(':authority', 'localhost'),
    ]);
    // ~16 KiB (the default max frame size) of header fields in each CONTINUATION, never END_HEADERS.
    const block = Buffer.concat(
      Array.from({ length: 150 }, (_, i) => literal(`x-flood-${i % 10}`, 'v'.repeat(90))),
    );
    const seen = await floodConnections(
      httpsPort(),
      pki.ca,
      FLOOD_MS,
      () => {
        let n = 0;
        return () => (n++ === 0 ? frame(HEADERS, 0x1, 1, first) : frame(CONTINUATION, 0, 1, block));
      },
      { read: true },
    );
    clearInterval(sampler);
    await other.stop();
    console.log(
      `[http2 continuation flood] ${seen.line()}; ${other.line()}; gateway RSS ${MiB(rssBefore)} → max ${MiB(rssMax)} MiB`,
    );
    expect(seen.closed).toBe(seen.connections);
    expect(rssMax - rssBefore).toBeLessThan(RSS_BOUND);
    expect([...other.statuses.keys()]).toEqual([200]);
    expect(other.ms.length).toBeGreaterThan(20);
  }, 60_000);

  it('SETTINGS flood, ACKs never read: others keep being served, memory bounded', async () => {
    const rssBefore = rssBytes(gw.process.pid)!;
    let rssMax = rssBefore;
    const sampler = setInterval(() => {
      rssMax = Math.max(rssMax, rssBytes(gw.process.pid) ?? 0);
    }, 100);
    const other = bystander(origin, pki.ca);
    // SETTINGS_INITIAL_WINDOW_SIZE (0x4) = 65535: valid, and each one must be acknowledged.
    const settings = frame(SETTINGS, 0, 0, Buffer.from([0x00, 0x04, 0x00, 0x00, 0xff, 0xff]));
    const seen = await floodConnections(httpsPort(), pki.ca, FLOOD_MS, () => () => settings, { read: false });
    clearInterval(sampler);
    await other.stop();
    console.log(
      `[http2 settings flood] ${seen.line()}; ${other.line()}; gateway RSS ${MiB(rssBefore)} → max ${MiB(rssMax)} MiB`,
    );
    expect(rssMax - rssBefore).toBeLessThan(RSS_BOUND);
    expect([...other.statuses.keys()]).toEqual([200]);
    expect(other.ms.length).toBeGreaterThan(20);
  }, 60_000);
});
