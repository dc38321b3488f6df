/**
 * WebSocket over the TLS listener (wss): an HTTP/1.1 client's upgrade goes through the same
 * ingress and chain as on the cleartext port, and the upstream is told the client used https.
 * (h2 offers no upgrade: node:http2 does not enable extended CONNECT, so browsers use HTTP/1.1 for it.)
 */
import { once } from 'node:events';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { DataPlane } from '../../dataplane/main.ts';
import { startTestDataPlane } from '../helpers/servers.ts';
import { route, upstream } from '../helpers/tables.ts';
import { startWsUpstream } from '../helpers/ws-upstream.ts';
import { makePki, type Pki } from './pki.ts';
import { certificate, tlsSnapshot } from './tls-helpers.ts';

let pki: Pki;
let ws: Awaited<ReturnType<typeof startWsUpstream>>;
let dp: DataPlane;

beforeAll(async () => {
  pki = makePki();
  ws = await startWsUpstream();
  dp = await startTestDataPlane({
    httpsPort: 0,
    initialSnapshot: tlsSnapshot(
      [route('live', 'ws', '/live')],
      [upstream('ws', ws.url)],
      [certificate('live', ['live.example.test'], pki.leaf('live', ['live.example.test']))],
    ),
  });
});
afterAll(async () => {
  await dp?.close();
  await ws?.close();
  pki?.remove();
});

describe('wss on the TLS listener', () => {
  it('tunnels messages both ways; the upstream sees X-Forwarded-Proto https', async () => {
    const client = new WebSocket(`${dp.httpsUrl.replace('https', 'wss')}/live/room?x=1`, {
      ca: pki.ca,
      servername: 'live.example.test',
      headers: { host: 'live.example.test' },
    } as WebSocket.ClientOptions); // ws passes TLS options on to tls.connect
    await once(client, 'open');
    client.send('hello');
    const [msg] = await once(client, 'message');
    expect(String(msg)).toBe('echo:hello');
    const up = ws.upgrades[ws.upgrades.length - 1];
    expect(up.url).toBe('/live/room?x=1');
    expect(up.headers['x-forwarded-proto']).toBe('https');
    client.close();
    await once(client, 'close');
  });

  it('without a default certificate, a name no certificate covers gets no handshake', async () => {
    const client = new WebSocket(`${dp.httpsUrl.replace('https', 'wss')}/live`, {
      ca: pki.ca,
      servername: 'unknown.example.test',
    } as WebSocket.ClientOptions);
    const [err] = await once(client, 'error');
    expect(String(err)).toMatch(/alert|handshake|socket|ECONNRESET/i);
  });
});
