/**
 * bytesOut over h2: the access log and the per-consumer bytes count each response's own body
 * bytes, also when several streams of one h2 session answer at once (an h2 stream shares its
 * session's socket, so the socket's byte count cannot tell them apart). A real node:http2 client
 * on the TLS listener, three concurrent streams of different sizes, plus a problem the gateway
 * answers itself; over HTTP/1.1 the same listener still counts head and body.
 */
import { connect } from 'node:http2';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DataPlane } from '../../dataplane/main.ts';
import { makePki, type Pki } from '../tls/pki.ts';
import { certificate, tlsSnapshot } from '../tls/tls-helpers.ts';
import { capturedLog, startTestDataPlane, startUpstream, type Upstream } from '../helpers/servers.ts';
import { pluginInstance, route, upstream } from '../helpers/tables.ts';

const HOST = 'h2.example.test';
let pki: Pki;
let up: Upstream;
let dp: DataPlane;
const captured = capturedLog();

beforeAll(async () => {
  pki = makePki();
  // /size/N answers N bytes, chunked, with a little delay so the streams overlap.
  up = await startUpstream((req, res) => {
    if (req.url === '/size/late') {
      setTimeout(() => res.end('late'), 200);
      return true;
    }
    const n = Number(/^\/size\/(\d+)/.exec(req.url ?? '')?.[1] ?? 0);
    res.writeHead(200, { 'content-type': 'application/octet-stream' });
    setTimeout(() => {
      res.write(Buffer.alloc(n >> 1, 'a'));
      setTimeout(() => res.end(Buffer.alloc(n - (n >> 1), 'b')), 20);
    }, 20);
    return true;
  });
  dp = await startTestDataPlane({
    httpsPort: 0,
    accessLog: true,
    analyticsConsumers: 5,
    log: captured.log,
    initialSnapshot: tlsSnapshot(
      [
        route('size', 'u', '/size'),
        route('locked', 'u', '/locked', {
          plugins: [
            pluginInstance('keys', 'key-auth', {
              consumers: [{ name: 'c', secretKeyRef: { name: 'k', key: 'c' }, sha256: '0'.repeat(64) }],
            }),
          ],
        }),
      ],
      [upstream('u', up.url)],
      [certificate('h2', [HOST], pki.leaf('h2', [HOST]))],
    ),
  });
});
afterAll(async () => {
  await dp?.close();
  await up?.close();
  pki?.remove();
});

/** The access-log lines of requests with this id prefix, by request id. */
function lines(prefix: string): Map<string, Record<string, unknown>> {
  const out = new Map<string, Record<string, unknown>>();
  for (const l of captured.text().split('\n')) {
    if (!l) continue;
    const line = JSON.parse(l) as Record<string, unknown>;
    if (typeof line.requestId === 'string' && line.requestId.startsWith(prefix))
      out.set(line.requestId, line);
  }
  return out;
}

/** One h2 request on `session`: status and body length. */
function h2get(session: ReturnType<typeof connect>, path: string, id: string) {
  return new Promise<{ status: number; length: number }>((resolve, reject) => {
    const s = session.request({ ':path': path, 'x-request-id': id });
    let status = 0;
    let length = 0;
    s.on('response', (h) => {
      status = Number(h[':status']);
    });
    s.on('data', (c: Buffer) => {
      length += c.length;
    });
    s.on('end', () => resolve({ status, length }));
    s.on('error', reject);
    s.end();
  });
}

describe('access log bytesOut on h2', () => {
  it('counts each stream its own body bytes, with streams of one session answering at once', async () => {
    const session = connect(dp.httpsUrl, { ca: pki.ca, servername: HOST });
    try {
      const sizes = [1_000, 5_000, 70_000];
      const answers = await Promise.all(sizes.map((n, i) => h2get(session, `/size/${n}`, `h2-size-${i}-x`)));
      expect(answers).toEqual(sizes.map((n) => ({ status: 200, length: n })));
      // A problem the gateway answers itself (401 from key-auth): its problem body.
      const refused = await h2get(session, '/locked', 'h2-locked-x');
      expect(refused.status).toBe(401);
      const logged = lines('h2-');
      sizes.forEach((n, i) => {
        expect(logged.get(`h2-size-${i}-x`)).toMatchObject({ status: 200, bytesOut: n });
      });
      expect(logged.get('h2-locked-x')).toMatchObject({ status: 401, bytesOut: refused.length });
      expect(refused.length).toBeGreaterThan(0);
    } finally {
      session.close();
    }
    // The per-consumer bytes (no consumer: "(none)") add up to what the streams sent.
    const text = await (await request(`${dp.adminUrl}/metrics`)).body.text();
    const out =
      /sluice_consumer_bytes_total\{route="route\/test\/size\/size\/0",consumer="\(none\)",direction="out"\} (\d+)/.exec(
        text,
      );
    expect(Number(out?.[1])).toBe(1_000 + 5_000 + 70_000);
  });

  it('over HTTP/1.1 on the same listener: head and body, as on the cleartext port', async () => {
    const h1 = new Agent({ connect: { ca: pki.ca, servername: HOST }, allowH2: false });
    try {
      const r = await request(`${dp.httpsUrl}/size/300`, {
        dispatcher: h1,
        headers: { host: HOST, 'x-request-id': 'h1-size-x' },
      });
      expect((await r.body.arrayBuffer()).byteLength).toBe(300);
    } finally {
      await h1.destroy();
    }
    const bytesOut = lines('h1-').get('h1-size-x')?.bytesOut as number;
    expect(bytesOut).toBeGreaterThan(300 + 'HTTP/1.1 200 OK\r\n'.length);
  });

  it('a stream the client cancels before the upstream answers still gets its line, and the gateway goes on', async () => {
    const session = connect(dp.httpsUrl, { ca: pki.ca, servername: HOST });
    try {
      const s = session.request({ ':path': '/size/late', 'x-request-id': 'h2-cancel-x' });
      s.on('error', () => {});
      s.end();
      await new Promise((r) => setTimeout(r, 50));
      s.close(); // RST_STREAM (CANCEL) while the gateway waits on the upstream
      const deadline = Date.now() + 2_000;
      while (!lines('h2-cancel-').has('h2-cancel-x') && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 20));
      expect(lines('h2-cancel-').has('h2-cancel-x')).toBe(true);
      expect(await h2get(session, '/size/10', 'h2-after-x')).toEqual({ status: 200, length: 10 });
    } finally {
      session.close();
    }
  });
});
