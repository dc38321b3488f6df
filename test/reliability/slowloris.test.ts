/**
 * Slowloris: 500 connections to one gateway, each sending a request's headers one byte a second
 * and never finishing them, while other clients (4, a request every 10 ms or so each) use the
 * gateway as usual.
 *  - the other clients' requests all answer 200, promptly (p99 under a generous 1 s);
 *  - the slow connections are cut by the headers timeout (Node's 60 s, checked every 30 s):
 *    every one closed within 100 s, none served.
 * Printed: the other clients' requests and p50/p99/max, when the slow connections were cut,
 * how (408 or a bare close), and the gateway's RSS.
 */
import { connect, type Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { failures, percentile, startLoad, statusLine } from '../helpers/load.ts';
import { rssBytes, type SluiceProcess, startSluice } from '../helpers/processes.ts';
import { startUpstream, type Upstream } from '../helpers/servers.ts';

const SLOW = 500;
const CUT_WITHIN_MS = 100_000;

const yaml = (port: number) => `
apiVersion: sluice.dev/v1alpha1
kind: GatewayRoute
metadata: { name: api }
spec:
  service: { name: up, url: "http://127.0.0.1:${port}" }
  routes:
    - { name: api, paths: ["/api"] }
`;

interface Slow {
  socket: Socket;
  /** ms after the start when it closed (NaN: still open). */
  closedAt: number;
  answer: string;
}

describe('slowloris: 500 connections sending headers a byte at a time', () => {
  let up: Upstream;
  let gw: SluiceProcess;
  beforeAll(async () => {
    up = await startUpstream((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
      return true;
    });
    gw = await startSluice({ yaml: yaml(up.port) });
  });
  afterAll(async () => {
    await gw?.stop();
    await up?.close();
  });

  it('other clients answered promptly; the slow connections cut by the headers timeout', async () => {
    const t0 = performance.now();
    const rssBefore = rssBytes(gw.process.pid) ?? Number.NaN;
    const slow: Slow[] = [];
    for (let i = 0; i < SLOW; i++) {
      const s: Slow = { socket: connect(gw.proxyPort, '127.0.0.1'), closedAt: Number.NaN, answer: '' };
      s.socket.setEncoding('utf8');
      s.socket.on('data', (d: string) => {
        s.answer += d;
      });
      s.socket.on('error', () => {});
      s.socket.on('close', () => {
        s.closedAt = performance.now() - t0;
      });
      slow.push(s);
    }
    // Never ends: a header line that keeps growing, one byte per connection per second.
    const prefix = `GET /api/slow HTTP/1.1\r\nHost: x\r\nX-Slow: `;
    let pos = 0;
    const drip = setInterval(() => {
      const byte = pos < prefix.length ? prefix[pos] : 'a';
      pos++;
      for (const s of slow) if (Number.isNaN(s.closedAt)) s.socket.write(byte);
    }, 1_000);
    const load = startLoad({
      url: gw.proxyUrl,
      concurrency: 4,
      pauseMs: 10,
      keep: true,
      timeoutMs: 10_000,
      next: (i) => ({ path: `/api/items/${i}` }),
    });
    let rssMax = rssBefore;
    try {
      while (slow.some((s) => Number.isNaN(s.closedAt)) && performance.now() - t0 < CUT_WITHIN_MS) {
        rssMax = Math.max(rssMax, rssBytes(gw.process.pid) ?? 0);
        await sleep(500);
      }
    } finally {
      clearInterval(drip);
      await load.stop();
      for (const s of slow) s.socket.destroy();
    }
    const cut = slow.filter((s) => !Number.isNaN(s.closedAt));
    const cutAt = cut.map((s) => s.closedAt);
    const with408 = cut.filter((s) => s.answer.startsWith('HTTP/1.1 408')).length;
    const served = slow.filter((s) => /^HTTP\/1\.1 [23]/.test(s.answer)).length;
    const ms = load.outcomes.map((o) => o.ms);
    console.log(
      `[slowloris] ${SLOW} slow connections (a header byte a second); other clients: ${load.done()} requests, ` +
        `statuses ${statusLine(load.byStatus)}, p50 ${percentile(ms, 50).toFixed(1)} ms, p99 ${percentile(ms, 99).toFixed(1)} ms, ` +
        `max ${ms.reduce((a, b) => Math.max(a, b), 0).toFixed(0)} ms; slow ones cut: ${cut.length}/${SLOW} ` +
        `(${with408} with 408, ${cut.length - with408} bare close, ${served} served), ` +
        `between ${Math.round(Math.min(...cutAt) / 1000)} and ${Math.round(Math.max(...cutAt) / 1000)} s; ` +
        `gateway RSS ${Math.round(rssBefore / 2 ** 20)} → max ${Math.round(rssMax / 2 ** 20)} MiB`,
    );
    expect(failures(load.byStatus)).toBe(0);
    expect(load.done()).toBeGreaterThan(5_000);
    expect(percentile(ms, 99)).toBeLessThan(1_000);
    expect(cut.length).toBe(SLOW);
    expect(served).toBe(0);
  }, 150_000);
});
