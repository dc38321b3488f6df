/**
 * A client that goes away cancels its upstream request at once, on every handler kind and
 * protocol: HTTP/1.1 (the socket closed mid-request), h2 (RST_STREAM, in storms), a WebSocket
 * handshake; the proxy, aggregate, SOAP and gRPC handlers. The upstream is a real server that
 * counts the requests it holds open (slow ones answer after 20 s, far past every bound here),
 * so a cancel that does not reach it shows as a request still open. And a client that floods
 * one h2 connection with reset streams (rapid reset, CVE-2023-44487) gets GOAWAY
 * ENHANCE_YOUR_CALM, counted and logged once.
 */
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import { type ClientHttp2Session, connect as h2connect, constants } from 'node:http2';
import { connect as tcpConnect, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DataPlane } from '../../dataplane/main.ts';
import { startGrpcServer, type TestGrpcServer } from '../grpc/server.ts';
import { gatewayRoute, rule, snapshotOf } from '../grpc/helpers.ts';
import { frame, HEADERS, literal, RST_STREAM, rawH2 } from '../helpers/raw-h2.ts';
import { capturedLog, startTestDataPlane } from '../helpers/servers.ts';
import { CUT_LINGER_MS, MAX_UNANSWERED_STREAMS } from '../../dataplane/server/h2-sessions.ts';
import { makePki, type Pki } from '../tls/pki.ts';

const HOST = 'cancel.example.test';
const SLOW_MS = 20_000;

/** An upstream that holds /slow… requests for 20 s and counts, per path, those still open. */
interface Counting {
  url: string;
  server: Server;
  /** Requests (and WebSocket handshakes) received and not yet closed, by path. */
  open: Map<string, number>;
  /** Requests received, by path. */
  seen: Map<string, number>;
  openUnder(prefix: string): number;
  seenUnder(prefix: string): number;
}

async function countingUpstream(): Promise<Counting> {
  const open = new Map<string, number>();
  const seen = new Map<string, number>();
  const add = (m: Map<string, number>, k: string, d: number) => m.set(k, (m.get(k) ?? 0) + d);
  const server = createServer((req, res) => {
    const path = req.url ?? '';
    add(open, path, 1);
    add(seen, path, 1);
    res.on('close', () => add(open, path, -1));
    req.resume();
    if (!path.startsWith('/slow')) {
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"fast":true}');
      return;
    }
    // /slow/stream…: the head and a first chunk at once, the rest after 20 s.
    if (path.startsWith('/slow/stream')) res.writeHead(200, { 'content-type': 'text/plain' }).write('first');
    const t = setTimeout(() => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'), SLOW_MS);
    res.on('close', () => clearTimeout(t));
  });
  // A WebSocket handshake the upstream never answers: the gateway's side of it must go when the client does.
  server.on('upgrade', (req, socket) => {
    const path = req.url ?? '';
    add(open, path, 1);
    add(seen, path, 1);
    socket.on('error', () => {});
    socket.on('close', () => add(open, path, -1));
    // Read, so that the gateway's FIN is seen (an upgraded socket is paused and half-open).
    socket.on('end', () => socket.destroy());
    socket.resume();
  });
  // Idle upstream connections stay: a request held open is seen as held, not freed by a timer.
  server.keepAliveTimeout = 60_000;
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const sum = (m: Map<string, number>, prefix: string) =>
    [...m].filter(([k]) => k.startsWith(prefix)).reduce((n, [, v]) => n + v, 0);
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    server,
    open,
    seen,
    openUnder: (prefix) => sum(open, prefix),
    seenUnder: (prefix) => sum(seen, prefix),
  };
}

let up: Counting;
let grpc: TestGrpcServer;
let dp: DataPlane;
let pki: Pki;
const log = capturedLog();

/** Polls `check` every 20 ms, up to `ms`. */
async function until(check: () => boolean, ms = 5_000): Promise<boolean> {
  for (const end = Date.now() + ms; Date.now() < end; await sleep(20)) if (check()) return true;
  return check();
}

beforeAll(async () => {
  up = await countingUpstream();
  grpc = await startGrpcServer();
  pki = makePki();
  const leaf = pki.leaf('cancel', [HOST]);
  const soapRule = {
    name: 'soap',
    paths: ['/soap'],
    soap: { operation: 'Slow', namespace: 'urn:test', action: 'urn:test#Slow', path: '/slow-soap' },
  };
  const aggregateRule = {
    name: 'agg',
    paths: ['/agg'],
    aggregate: {
      pattern: '/agg/{id}',
      timeout: '30s',
      calls: [
        { name: 'a', url: up.url, path: '/slow-agg-a/{{ path.id }}' },
        { name: 'b', url: up.url, path: '/slow-agg-b/{{ path.id }}' },
      ],
    },
  };
  dp = await startTestDataPlane({
    httpsPort: 0,
    tlsDefault: { certFile: leaf.certFile, keyFile: leaf.keyFile },
    log: log.log,
    initialSnapshot: snapshotOf([
      gatewayRoute('plain', up.url, [{ name: 'slow', paths: ['/slow', '/fast', '/ws'] }, soapRule]),
      gatewayRoute('agg', 'http://127.0.0.1:9', [aggregateRule]),
      gatewayRoute('rpc', grpc.url, [
        rule('slow', '/rpc-slow', 'Slow', { body: '*', timeout: '60s' }, { methods: ['POST'] }),
      ]),
    ]),
  });
});

afterAll(async () => {
  await dp?.close();
  up?.server.closeAllConnections();
  up?.server.close();
  await grpc?.close();
  pki?.remove();
});

/** A raw HTTP/1.1 connection that sends `text` and is then left hanging (the test destroys it). */
async function hangingRequest(text: string): Promise<Socket> {
  const socket = tcpConnect(new URL(dp.proxyUrl).port as unknown as number, '127.0.0.1');
  await once(socket, 'connect');
  socket.on('error', () => {});
  socket.write(text);
  return socket;
}

function h2(): Promise<ClientHttp2Session> {
  const session = h2connect(dp.httpsUrl, { ca: pki.ca, servername: HOST });
  session.on('error', () => {});
  return once(session, 'connect').then(() => session);
}

describe('a client that goes away cancels its upstream request', () => {
  it('h2: after 5 storms of 200 cancelled streams, ≤ 10 upstream requests are open 1 s later and another client is answered at once', async () => {
    for (let storm = 0; storm < 5; storm++) {
      const session = await h2();
      const streams = Array.from({ length: 200 }, () => {
        const s = session.request({ ':path': '/slow', ':authority': HOST });
        s.on('error', () => {});
        s.resume();
        return s;
      });
      // Let the first ones (100 at a time: the session's concurrent-stream bound) reach the upstream.
      await until(() => up.openUnder('/slow') >= 50, 3_000);
      for (const s of streams) s.close(constants.NGHTTP2_CANCEL);
      session.close();
    }
    // The storms did reach the upstream (else this would prove nothing).
    expect(up.seenUnder('/slow')).toBeGreaterThanOrEqual(250);
    await sleep(1_000);
    expect(up.openUnder('/slow')).toBeLessThanOrEqual(10);
    // The same upstream still serves others: its pool is not held by the cancelled requests.
    const t0 = Date.now();
    const r = await request(`${dp.proxyUrl}/fast`, { headersTimeout: 10_000 });
    expect(r.statusCode).toBe(200);
    expect(await r.body.json()).toEqual({ fast: true });
    expect(Date.now() - t0).toBeLessThan(3_000); // the held requests would answer after 20 s
  });

  it('h2: a stream reset after its response started cancels the upstream body too', async () => {
    const session = await h2();
    const s = session.request({ ':path': '/slow/stream', ':authority': HOST });
    s.on('error', () => {});
    const [headers] = (await once(s, 'response')) as [Record<string, unknown>];
    expect(headers[':status']).toBe(200);
    expect(String((await once(s, 'data'))[0])).toBe('first');
    expect(up.openUnder('/slow/stream')).toBe(1);
    s.close(constants.NGHTTP2_CANCEL);
    expect(await until(() => up.openUnder('/slow/stream') === 0, 3_000)).toBe(true);
    session.close();
  });

  it('HTTP/1.1: a client that closes its socket mid-request cancels the upstream request', async () => {
    const socket = await hangingRequest(`GET /slow/h1 HTTP/1.1\r\nHost: ${HOST}\r\n\r\n`);
    expect(await until(() => up.openUnder('/slow/h1') === 1)).toBe(true);
    socket.destroy();
    expect(await until(() => up.openUnder('/slow/h1') === 0, 3_000)).toBe(true);
  });

  it('WebSocket: a client gone during the upstream handshake cuts that handshake', async () => {
    const socket = await hangingRequest(
      `GET /ws HTTP/1.1\r\nHost: ${HOST}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
        'Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n',
    );
    expect(await until(() => up.openUnder('/ws') === 1)).toBe(true);
    socket.destroy();
    expect(await until(() => up.openUnder('/ws') === 0, 3_000)).toBe(true);
  });

  it('aggregate: every backend call is cancelled', async () => {
    const socket = await hangingRequest(`GET /agg/7 HTTP/1.1\r\nHost: ${HOST}\r\n\r\n`);
    expect(await until(() => up.openUnder('/slow-agg-') === 2)).toBe(true);
    socket.destroy();
    expect(await until(() => up.openUnder('/slow-agg-') === 0, 3_000)).toBe(true);
    expect(up.seenUnder('/slow-agg-')).toBe(2);
  });

  it('SOAP: the SOAP call is cancelled', async () => {
    const body = '{"id":"1"}';
    const socket = await hangingRequest(
      `POST /soap HTTP/1.1\r\nHost: ${HOST}\r\nContent-Type: application/json\r\n` +
        `Content-Length: ${body.length}\r\n\r\n${body}`,
    );
    expect(await until(() => up.openUnder('/slow-soap') === 1)).toBe(true);
    socket.destroy();
    expect(await until(() => up.openUnder('/slow-soap') === 0, 3_000)).toBe(true);
  });

  it('gRPC: the call is cancelled on the service', async () => {
    const body = JSON.stringify({ ms: SLOW_MS });
    const socket = await hangingRequest(
      `POST /rpc-slow HTTP/1.1\r\nHost: ${HOST}\r\nContent-Type: application/json\r\n` +
        `Content-Length: ${body.length}\r\n\r\n${body}`,
    );
    expect(await until(() => grpc.calls.Slow === 1)).toBe(true);
    socket.destroy();
    expect(await until(() => grpc.cancelled.Slow === 1, 3_000)).toBe(true);
  });
});

describe('rapid reset (CVE-2023-44487)', () => {
  // Once flaky with the cores saturated (2 runs in 10 with three busy loops beside it): the
  // gateway destroyed the connection with the flood's bytes unread, the reset made the client's
  // kernel drop the GOAWAY it had not read yet. The cut now lingers (h2-sessions.ts): 10 in 10.
  it('a connection that keeps resetting streams gets GOAWAY ENHANCE_YOUR_CALM and is closed; one log line, counted', async () => {
    // Counted from here: a retried attempt finds the earlier attempt's cut in the log and metric.
    const logged = () =>
      log
        .text()
        .split('\n')
        .filter((l) => l.includes('rapid reset')).length;
    const counted = async () =>
      Number(
        /reason="rapid_reset"\} (\d+)/.exec(
          await dp.metrics.registry.getSingleMetricAsString('sluice_http2_connections_cut_total'),
        )?.[1] ?? 0,
      );
    const before = { logged: logged(), counted: await counted() };
    const session = await h2();
    const goaway = new Promise<number>((resolve) => session.once('goaway', (code: number) => resolve(code)));
    const closed = new Promise((resolve) => session.once('close', resolve));
    let sent = 0;
    try {
      // Open and reset at once, as the attack does, until the gateway hangs up (bounded).
      while (!session.closed && !session.destroyed && sent < 5_000) {
        for (let i = 0; i < 50 && !session.closed && !session.destroyed; i++, sent++) {
          const s = session.request({ ':path': '/slow/flood', ':authority': HOST });
          s.on('error', () => {});
          s.close(constants.NGHTTP2_CANCEL);
        }
        await sleep(5);
      }
      expect(await Promise.race([goaway, sleep(5_000).then(() => `no GOAWAY after ${sent} resets`)])).toBe(
        constants.NGHTTP2_ENHANCE_YOUR_CALM,
      );
      await closed;
    } finally {
      session.destroy();
    }
    expect(sent).toBeLessThan(5_000);
    expect(await counted()).toBe(before.counted + 1);
    expect(logged()).toBe(before.logged + 1);
    // The flood's upstream requests are cancelled with it.
    expect(await until(() => up.openUnder('/slow/flood') <= 10, 3_000)).toBe(true);
    // Other connections are not affected.
    const other = await h2();
    const s = other.request({ ':path': '/fast', ':authority': HOST });
    s.resume();
    const [headers] = (await once(s, 'response')) as [Record<string, unknown>];
    expect(headers[':status']).toBe(200);
    other.close();
  });

  it('a flooding client that stays after the GOAWAY is read until it goes, then cut after the linger', async () => {
    const raw = await rawH2(Number(new URL(dp.httpsUrl).port), pki.ca, HOST);
    // HEADERS (GET /slow/linger) and RST_STREAM CANCEL at once, past the bound, in one write.
    const headers = Buffer.concat([
      literal(':method', 'GET'),
      literal(':scheme', 'https'),
      literal(':path', '/slow/linger'),
      literal(':authority', HOST),
    ]);
    const cancel = Buffer.from([0, 0, 0, constants.NGHTTP2_CANCEL]);
    const pairs = Array.from({ length: MAX_UNANSWERED_STREAMS + 100 }, (_, i) => [
      frame(HEADERS, 0x5, 2 * i + 1, headers),
      frame(RST_STREAM, 0, 2 * i + 1, cancel),
    ]);
    raw.socket.write(Buffer.concat(pairs.flat()));
    expect(await until(() => raw.goaway !== null, 5_000)).toBe(true);
    expect(raw.goaway).toBe(constants.NGHTTP2_ENHANCE_YOUR_CALM);
    const goawayAt = performance.now();
    // More frames after the GOAWAY: read and dropped (no reset), no stream served.
    raw.socket.write(frame(HEADERS, 0x5, 2 * pairs.length + 1, headers));
    await sleep(CUT_LINGER_MS / 2);
    expect(raw.closed).toBe(false);
    expect(await until(() => raw.closed, CUT_LINGER_MS + 2_000)).toBe(true);
    expect(raw.closedAt - goawayAt).toBeGreaterThanOrEqual(CUT_LINGER_MS / 2);
    expect(raw.reset).toBe(false);
    expect(await until(() => up.openUnder('/slow/linger') === 0, 3_000)).toBe(true);
  });
});
