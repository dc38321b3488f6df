/**
 * Shutdown of the TLS listener: close() lets requests in flight on an h2 session and on an
 * HTTP/1.1 keep-alive connection finish, then ends both connections without waiting for the
 * drain timeout (the h2 session gets a GOAWAY, the HTTP/1.1 connection is closed once idle).
 */
import { connect } from 'node:http2';
import { describe, expect, it } from 'vitest';
import { Agent, request } from 'undici';
import { startTestDataPlane, startUpstream } from '../helpers/servers.ts';
import { route, upstream } from '../helpers/tables.ts';
import { makePki } from './pki.ts';
import { certificate, tlsSnapshot } from './tls-helpers.ts';

describe('closing the TLS listener', () => {
  it('finishes in-flight h2 and HTTP/1.1 requests, then closes well before the drain timeout', async () => {
    const pki = makePki();
    const slow = await startUpstream((_req, res) => {
      setTimeout(() => res.end('done'), 500);
      return true;
    });
    const dp = await startTestDataPlane({
      httpsPort: 0,
      drainTimeoutMs: 10_000,
      initialSnapshot: tlsSnapshot(
        [route('slow', 'slow', '/slow')],
        [upstream('slow', slow.url)],
        [certificate('d', ['d.example.test'], pki.leaf('d', ['d.example.test']))],
      ),
    });
    const connect = { ca: pki.ca, servername: 'd.example.test' };
    const h2 = new Agent({ connect, allowH2: true });
    const h1 = new Agent({ connect, keepAliveTimeout: 60_000 });
    const headers = { host: 'd.example.test' };
    try {
      // Connections open and idle-kept first, then one slow request on each.
      for (const a of [h2, h1])
        await (await request(`${dp.httpsUrl}/slow`, { dispatcher: a, headers })).body.text();
      const inflight = [h2, h1].map((a) =>
        request(`${dp.httpsUrl}/slow`, { dispatcher: a, headers }).then(async (r) => ({
          status: r.statusCode,
          body: await r.body.text(),
        })),
      );
      await new Promise((r) => setTimeout(r, 100));
      const t0 = Date.now();
      await dp.close();
      const took = Date.now() - t0;
      expect(await Promise.all(inflight)).toEqual([
        { status: 200, body: 'done' },
        { status: 200, body: 'done' },
      ]);
      expect(took).toBeLessThan(5_000);
    } finally {
      await h2.destroy();
      await h1.destroy();
      await dp.close();
      await slow.close();
      pki.remove();
    }
  });
});

describe('idle h2 sessions', () => {
  it('are closed after the keep-alive timeout without a stream, never while a slow stream is open', async () => {
    const pki = makePki();
    const slow = await startUpstream((req, res) => {
      if (req.url === '/slow') setTimeout(() => res.end('slow'), 1_200);
      else res.end('fast');
      return true;
    });
    const dp = await startTestDataPlane({
      httpsPort: 0,
      keepAliveTimeoutMs: 400,
      initialSnapshot: tlsSnapshot(
        [route('all', 'slow', '/')],
        [upstream('slow', slow.url)],
        [certificate('i', ['i.example.test'], pki.leaf('i', ['i.example.test']))],
      ),
    });
    const session = connect(dp.httpsUrl, { ca: pki.ca, servername: 'i.example.test' });
    const get = (path: string) =>
      new Promise<string>((resolve, reject) => {
        const s = session.request({ ':path': path, ':authority': 'i.example.test' });
        let body = '';
        s.on('data', (d) => (body += d));
        s.on('end', () => resolve(body));
        s.on('error', reject);
        s.end();
      });
    try {
      const closed = new Promise<number>((r) => session.once('close', () => r(Date.now())));
      const t0 = Date.now();
      // The slow stream is quiet for 1.2 s, three times the idle timeout: its session stays.
      expect(await get('/slow')).toBe('slow');
      expect(await get('/fast')).toBe('fast');
      const t1 = Date.now();
      // Then, with no stream open, the session is closed (GOAWAY) after about the idle timeout.
      const at = await closed;
      expect(t1 - t0).toBeGreaterThanOrEqual(1_200);
      expect(at - t1).toBeLessThan(2_000);
    } finally {
      session.destroy();
      await dp.close();
      await slow.close();
      pki.remove();
    }
  });
});
