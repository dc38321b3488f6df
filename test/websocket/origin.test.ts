/**
 * Cross-site WebSocket hijacking: a handshake from a page of an origin the route does not allow
 * gets a 403 problem and never reaches the upstream, on a route with cors (its origins) and on
 * one with websocket.allowedOrigins (both apply when both are set). Real clients: ws (browsers'
 * Origin, and Sec-WebSocket-Origin for protocol version 8), and raw handshakes for what ws
 * cannot send (Origin on two lines). A handshake without Origin (not a browser) is let through.
 */
import { once } from 'node:events';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { DataPlane } from '../../dataplane/main.ts';
import { rawRequest, statusOf } from '../helpers/raw-http.ts';
import { startTestDataPlane } from '../helpers/servers.ts';
import { pluginInstance, route, snapshot, upstream } from '../helpers/tables.ts';
import { startWsUpstream } from '../helpers/ws-upstream.ts';

const ORIGINS = ['https://app.example.com', 'https://*.example.org'];
const cors = (name: string, origins: string[]) =>
  pluginInstance(name, 'cors', { origins, credentials: !origins.includes('*') });

let ws: Awaited<ReturnType<typeof startWsUpstream>>;
let dp: DataPlane;
beforeAll(async () => {
  ws = await startWsUpstream();
  dp = await startTestDataPlane({
    initialSnapshot: snapshot(
      [
        route('cors', 'ws', '/cors', { plugins: [cors('c', ORIGINS)] }),
        route('listed', 'ws', '/listed', { websocket: { allowedOrigins: ORIGINS } }),
        route('both', 'ws', '/both', {
          plugins: [cors('b', ['https://app.example.com', 'https://b.example.com'])],
          websocket: { allowedOrigins: ['https://app.example.com'] },
        }),
        route('star', 'ws', '/star', { plugins: [cors('s', ['*'])] }),
        route('open', 'ws', '/open'),
      ],
      [upstream('ws', ws.url)],
    ),
  });
});
afterAll(async () => {
  await dp.close();
  await ws.close();
});

const wsUrl = (path: string) => `${dp.proxyUrl.replace('http', 'ws')}${path}`;

/** Opens a WebSocket with this Origin (none: undefined) and echoes one message through it. */
async function opens(path: string, origin?: string, protocolVersion?: 8 | 13): Promise<void> {
  const client = new WebSocket(wsUrl(path), {
    ...(origin && { origin }),
    ...(protocolVersion && { protocolVersion }),
  });
  await once(client, 'open');
  client.send('hi');
  const [msg] = await once(client, 'message');
  expect(String(msg)).toBe('echo:hi');
  client.close();
  await once(client, 'close');
}

/** A raw handshake with these extra header lines: the status and the body of the answer. */
async function handshake(path: string, lines: string[]) {
  const reply = await rawRequest(
    dp.proxyUrl,
    `GET ${path} HTTP/1.1\r\nHost: gw.test\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n` +
      `Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n${lines.map((l) => `${l}\r\n`).join('')}\r\n`,
  );
  const body = reply.slice(reply.indexOf('\r\n\r\n') + 4);
  return { status: statusOf(reply), reply, json: body.startsWith('{') ? JSON.parse(body) : null };
}

/** Origins near the allowed ones that are not them. */
const FOREIGN = [
  'https://evil.example',
  'https://app.example.com.evil.test',
  'https://evilapp.example.com',
  'http://app.example.com', // another scheme
  'https://app.example.com:8443', // another port
  'https://example.org', // the wildcard is for subdomains only
  'https://a.example.org.evil.test',
  'null', // sandboxed frames, file: pages
  'HTTPS://APP.EXAMPLE.COM', // browsers send origins lower-cased: this is no browser's
];

describe.each(['/cors', '/listed'])('WebSocket origins on %s', (path) => {
  it.each(['https://app.example.com', 'https://a.example.org', 'https://a.b.example.org'])(
    'a page of %s opens one',
    async (origin) => {
      await opens(path, origin);
    },
  );

  it('a client without Origin (not a browser) opens one', async () => {
    await opens(path);
  });

  it.each(FOREIGN)('a page of %s gets 403 and the upstream sees nothing', async (origin) => {
    const before = ws.upgrades.length;
    const r = await handshake(path, [`Origin: ${origin}`]);
    expect(r.status).toBe(403);
    expect(r.reply).toMatch(/content-type: application\/problem\+json/i);
    expect(r.reply).not.toMatch(/access-control-allow-origin/i);
    expect(r.json).toMatchObject({ code: 'SLC_ERR_WEBSOCKET_ORIGIN_REFUSED', status: 403 });
    expect(r.json.detail).toContain(JSON.stringify(origin));
    expect(ws.upgrades.length).toBe(before);
  });

  it('Origin on two lines is no origin: 403, even when each line is allowed', async () => {
    const r = await handshake(path, ['Origin: https://app.example.com', 'Origin: https://app.example.com']);
    expect(r.status).toBe(403);
  });

  it('protocol version 8 names the origin Sec-WebSocket-Origin: checked the same', async () => {
    const before = ws.upgrades.length;
    const r = await handshake(path, ['Sec-WebSocket-Origin: https://evil.example']);
    expect(r.status).toBe(403);
    const both = await handshake(path, [
      'Origin: https://app.example.com',
      'Sec-WebSocket-Origin: https://evil.example',
    ]);
    expect(both.status).toBe(403);
    expect(ws.upgrades.length).toBe(before);
  });
});

describe('WebSocket origins: which lists apply', () => {
  it('cors and allowedOrigins together: an origin must be in both', async () => {
    await opens('/both', 'https://app.example.com');
    expect((await handshake('/both', ['Origin: https://b.example.com'])).status).toBe(403);
  });

  it('cors origins "*": every origin (the operator said so)', async () => {
    await opens('/star', 'https://anything.test');
  });

  it('neither: every origin, as before', async () => {
    await opens('/open', 'https://anything.test');
  });

  it('a refused handshake is counted refused', async () => {
    const text = await (await fetch(`${dp.adminUrl}/metrics`)).text();
    expect(text).toMatch(
      /sluice_websocket_connections_total\{route="route\/test\/listed\/listed\/0",result="refused"\} [1-9]/,
    );
  });
});
