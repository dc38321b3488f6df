/** WebSocket upgrades are proxied on a route, with the same ingress rules as any request. */
import { once } from 'node:events';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { DataPlane } from '../../dataplane/main.ts';
import { startTestDataPlane } from '../helpers/servers.ts';
import { route, snapshot, transformer, upstream } from '../helpers/tables.ts';
import { startWsUpstream } from '../helpers/ws-upstream.ts';

let ws: Awaited<ReturnType<typeof startWsUpstream>>;
let dp: DataPlane;
beforeAll(async () => {
  ws = await startWsUpstream();
  dp = await startTestDataPlane({
    initialSnapshot: snapshot(
      [
        route('live', 'ws', '/live', {
          plugins: [transformer('v', { add: { headers: ['X-Gateway-Version:v1'] } })],
        }),
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

describe('WebSocket proxying', () => {
  it('tunnels messages both ways, on the normalized path, with the transformer applied', async () => {
    const client = new WebSocket(wsUrl('/live/./room//1?x=1'), { headers: { 'x-forwarded-for': '6.6.6.6' } });
    await once(client, 'open');
    client.send('hello');
    const [msg] = await once(client, 'message');
    expect(String(msg)).toBe('echo:hello');
    client.send(Buffer.from([1, 2, 3]), { binary: true });
    const [bin] = await once(client, 'message');
    expect([...(bin as Buffer)]).toEqual([1, 2, 3]);
    const up = ws.upgrades[ws.upgrades.length - 1];
    expect(up.url).toBe('/live/room/1?x=1');
    expect(up.headers['x-gateway-version']).toBe('v1');
    expect(up.headers['x-forwarded-for']).toBe('127.0.0.1');
    client.close();
    await once(client, 'close');
  });

  it('refuses an upgrade that matches no route with a 404 problem', async () => {
    const client = new WebSocket(wsUrl('/nowhere'));
    const [, res] = await once(client, 'unexpected-response');
    expect(res.statusCode).toBe(404);
    expect(res.headers['content-type']).toBe('application/problem+json');
  });

  it('refuses an upgrade whose path cannot be normalized safely', async () => {
    const client = new WebSocket(wsUrl('/live/%2e%2e%2fadmin'));
    const [, res] = await once(client, 'unexpected-response');
    expect(res.statusCode).toBe(400);
  });
});
