/**
 * Gateway HTTP listener ports end to end (real data plane, real upstreams, real clients): two
 * listeners on one port (a hostname one and a catch-all) each serve their own routes, a route of
 * the catch-all never answers for the hostname listener's host (isolation), a host no listener
 * takes gets 404, the proxy's fixed port serves none of the listeners' routes (nor they its
 * routes), one port speaks HTTP/1.1 and h2c with prior knowledge (with the h2 limits of the TLS
 * listener), and WebSocket upgrades work on it.
 */
import { once } from 'node:events';
import type { ClientHttp2Session } from 'node:http2';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { Route } from '../../dataplane/config/route-table.ts';
import type { DataPlane } from '../../dataplane/main.ts';
import { H2_MAX_CONCURRENT_STREAMS } from '../../dataplane/tls/settings.ts';
import { acceptedSockets, h2Request, h2Session, listenersOf, untilPort } from '../helpers/listeners.ts';
import { freePort, startTestDataPlane, startUpstream, type Upstream } from '../helpers/servers.ts';
import { listener, route, snapshot, upstream } from '../helpers/tables.ts';
import { startWsUpstream } from '../helpers/ws-upstream.ts';

/** An upstream answering its own name, so a test sees which one a request reached. */
const named = (name: string) =>
  startUpstream((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end(name);
    return true;
  });

let ups: Record<'app' | 'any' | 'own' | 'other', Upstream>;
let ws: Awaited<ReturnType<typeof startWsUpstream>>;
let dp: DataPlane;
let port: number;
let otherPort: number;

const on = (name: string, path: string, to: string, l: string): Route =>
  route(name, to, path, { listeners: [`listener/test/gw/${l}`] });

beforeAll(async () => {
  ups = {
    app: await named('app'),
    any: await named('any'),
    own: await named('own'),
    other: await named('other'),
  };
  ws = await startWsUpstream();
  port = await freePort();
  otherPort = await freePort();
  dp = await startTestDataPlane({
    initialSnapshot: snapshot(
      [
        on('app', '/app', 'app', 'web'),
        on('live', '/ws', 'ws', 'any'),
        on('any', '/', 'any', 'any'),
        on('other', '/', 'other', 'other'),
        route('own', 'own', '/own'),
      ],
      [
        upstream('app', ups.app.url),
        upstream('any', ups.any.url),
        upstream('own', ups.own.url),
        upstream('other', ups.other.url),
        upstream('ws', ws.url),
      ],
      {
        listeners: [
          listener('any', port),
          listener('other', otherPort, { hostname: 'other.example.test' }),
          listener('web', port, { hostname: 'app.example.test' }),
        ],
      },
    ),
  });
  await untilPort(dp, port);
  await untilPort(dp, otherPort);
});

afterAll(async () => {
  await dp?.close();
  for (const u of Object.values(ups ?? {})) await u.close();
  await ws?.close();
});

const get = async (base: string, path: string, host: string) => {
  const r = await request(`${base}${path}`, { headers: { host } });
  const text = await r.body.text();
  return { status: r.statusCode, text, code: r.statusCode === 404 ? JSON.parse(text).code : undefined };
};
const at = (p: number) => `http://127.0.0.1:${p}`;

describe('HTTP listener ports', () => {
  it('GET /config lists every listener with its port, bound', async () => {
    expect(await listenersOf(dp.adminUrl)).toEqual([
      { id: 'listener/test/gw/any', port, bound: true },
      { id: 'listener/test/gw/other', port: otherPort, bound: true },
      { id: 'listener/test/gw/web', port, bound: true },
    ]);
  });

  it("sends each Host to its listener's routes", async () => {
    expect(await get(at(port), '/app/1', 'app.example.test')).toMatchObject({ status: 200, text: 'app' });
    expect(await get(at(port), '/app/1', 'APP.example.test:8080')).toMatchObject({
      status: 200,
      text: 'app',
    });
    expect(await get(at(port), '/app/1', 'elsewhere.test')).toMatchObject({ status: 200, text: 'any' });
    expect(await get(at(otherPort), '/x', 'other.example.test')).toMatchObject({
      status: 200,
      text: 'other',
    });
  });

  it("never answers the hostname listener's host with a catch-all route (isolation)", async () => {
    expect(await get(at(port), '/elsewhere', 'app.example.test')).toEqual({
      status: 404,
      text: expect.any(String),
      code: 'SLC_ERR_ROUTE_NOT_FOUND',
    });
    expect(ups.any.seen.some((s) => s.headers.host === 'app.example.test')).toBe(false);
  });

  it('answers 404 for a host no listener of the port takes', async () => {
    expect(await get(at(otherPort), '/x', 'app.example.test')).toMatchObject({
      status: 404,
      code: 'SLC_ERR_ROUTE_NOT_FOUND',
    });
  });

  it("keeps the listeners' routes off the proxy port and the proxy's routes off the listener ports", async () => {
    expect(await get(dp.proxyUrl, '/app/1', 'app.example.test')).toMatchObject({
      status: 404,
      code: 'SLC_ERR_ROUTE_NOT_FOUND',
    });
    expect(await get(dp.proxyUrl, '/own', 'app.example.test')).toMatchObject({ status: 200, text: 'own' });
    expect(await get(at(otherPort), '/own', 'other.example.test')).toMatchObject({
      status: 200,
      text: 'other',
    });
    expect(await get(at(port), '/own', 'app.example.test')).toMatchObject({ status: 404 });
    expect(ups.own.seen).toHaveLength(1);
  });

  describe('h2c with prior knowledge and HTTP/1.1 on one port', () => {
    let session: ClientHttp2Session;
    beforeAll(async () => {
      session = await h2Session(at(port));
    });
    afterAll(() => session?.close());

    it('serves h2 requests by :authority, with the same listener choice', async () => {
      const [app, any, none] = await Promise.all([
        h2Request(session, 'app.example.test', '/app/h2'),
        h2Request(session, 'elsewhere.test', '/app/h2'),
        h2Request(session, 'app.example.test', '/elsewhere'),
      ]);
      expect(app).toMatchObject({ status: 200, body: 'app' });
      expect(any).toMatchObject({ status: 200, body: 'any' });
      expect(none.status).toBe(404);
      expect(JSON.parse(none.body).code).toBe('SLC_ERR_ROUTE_NOT_FOUND');
      expect(ups.app.seen.at(-1)?.url).toBe('/app/h2');
    });

    it("applies the TLS listener's h2 settings", () => {
      expect(session.remoteSettings.maxConcurrentStreams).toBe(H2_MAX_CONCURRENT_STREAMS);
    });

    it('serves HTTP/1.1 on the same port meanwhile', async () => {
      expect(await get(at(port), '/app/h1', 'app.example.test')).toMatchObject({ status: 200, text: 'app' });
    });
  });

  it('proxies a WebSocket upgrade on a listener port', async () => {
    const client = new WebSocket(`ws://127.0.0.1:${port}/ws/room`, {
      headers: { host: 'chat.example.test' },
    });
    await once(client, 'open');
    client.send('hello');
    const [msg] = await once(client, 'message');
    expect(String(msg)).toBe('echo:hello');
    expect(ws.upgrades.at(-1)?.url).toBe('/ws/room');
    client.close();
    await once(client, 'close');
  });

  it("sets up its connections as the proxy port's: TCP_NODELAY, half-open left to the HTTP server", async () => {
    // Without TCP_NODELAY, Nagle's algorithm held a response's later small writes until the
    // client's delayed ACK of the earlier ones.
    const [proxyPort, listenerPort] = await acceptedSockets([Number(new URL(dp.proxyUrl).port), port]);
    expect(proxyPort).toEqual({ noDelay: true, allowHalfOpen: true });
    expect(listenerPort).toEqual(proxyPort);
  });
});
