/**
 * mtls-auth across TLS session resumption: a resumed session (TLS 1.2 session id or ticket,
 * TLS 1.3 ticket) presents no new certificate, yet its request is still the client's: OpenSSL
 * keeps the peer certificate in the session, and the plugin's verdict is found by it.
 */
import { connect, type TLSSocket } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DataPlane } from '../../dataplane/main.ts';
import { startTestDataPlane, startUpstream, type Upstream } from '../helpers/servers.ts';
import { route, upstream } from '../helpers/tables.ts';
import { makePki, type Pki } from '../tls/pki.ts';
import { certificate, tlsSnapshot } from '../tls/tls-helpers.ts';
import { type ClientLeaf, type ClientPki, makeClientPki, mtlsPlugin } from './client-pki.ts';

const HOST = 'api.example.test';
let serverPki: Pki;
let ca: ClientPki;
let leaf: ClientLeaf;
let up: Upstream;
let dp: DataPlane;
let port: number;

beforeAll(async () => {
  serverPki = makePki();
  ca = makeClientPki();
  leaf = ca.leaf('orders-client');
  up = await startUpstream();
  dp = await startTestDataPlane({
    httpsPort: 0,
    initialSnapshot: tlsSnapshot(
      [route('m', 'u', '/m', { plugins: [mtlsPlugin('m', ca)] })],
      [upstream('u', up.url)],
      [certificate('server', [HOST], serverPki.leaf('server', [HOST]))],
    ),
  });
  port = Number(new URL(dp.httpsUrl).port);
});
afterAll(async () => {
  await dp.close();
  await up.close();
  ca.remove();
  serverPki.remove();
});

/** One HTTP/1.1 GET on a fresh TLS connection (offering `session`): status, whether resumed, the session to offer next. */
function get(version: 'TLSv1.2' | 'TLSv1.3', session?: Buffer) {
  return new Promise<{ status: number; resumed: boolean; session: Buffer | undefined }>((resolve, reject) => {
    let next: Buffer | undefined;
    const socket: TLSSocket = connect({
      host: '127.0.0.1',
      port,
      servername: HOST,
      ca: serverPki.ca,
      cert: leaf.cert,
      key: leaf.key,
      minVersion: version,
      maxVersion: version,
      ALPNProtocols: ['http/1.1'],
      session,
    });
    socket.on('session', (s) => {
      next = s;
    });
    let data = '';
    let resumed = false;
    socket.once('secureConnect', () => {
      resumed = socket.isSessionReused();
      socket.write(`GET /m HTTP/1.1\r\nhost: ${HOST}\r\nconnection: close\r\n\r\n`);
    });
    socket.on('data', (d) => {
      data += d;
    });
    socket.once('error', reject);
    socket.once('close', () => resolve({ status: Number(data.split(' ')[1]), resumed, session: next }));
  });
}

describe('mtls-auth and session resumption', () => {
  it.each(['TLSv1.2', 'TLSv1.3'] as const)(
    '%s: the resumed session is still the verified client',
    async (v) => {
      const first = await get(v);
      expect([first.status, first.resumed]).toEqual([200, false]);
      const again = await get(v, first.session);
      expect([again.status, again.resumed]).toEqual([200, true]);
    },
  );
});
