/**
 * The plugin platform, through a real data plane: a GatewayPlugin is created once per snapshot
 * however many routes carry it (one JWKS fetch for 50 routes); HTTP requests and WebSocket
 * upgrades run the same chain runner (an asynchronous jwt verification works on an upgrade);
 * a hook that throws, synchronously or by rejecting, is one 500 problem, one log line and one
 * metric sample, and the process goes on serving; requests refused at ingress are logged and
 * counted too; a 405 says what is allowed.
 */
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { exportJWK, type GenerateKeyPairResult, generateKeyPair, SignJWT } from 'jose';
import { pino } from 'pino';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import type { DataPlane } from '../../dataplane/main.ts';
import { rawRequest, statusOf } from '../helpers/raw-http.ts';
import { startTestDataPlane, startUpstream, type Upstream } from '../helpers/servers.ts';
import { route, snapshot, upstream } from '../helpers/tables.ts';
import { startWsUpstream } from '../helpers/ws-upstream.ts';

const ISS = 'https://idp.test/';
const ROUTES = 50;
let up: Upstream;
let ws: Awaited<ReturnType<typeof startWsUpstream>>;
let dp: DataPlane;
let jwksServer: Server;
let fetches = 0;
let key: GenerateKeyPairResult;
const lines: Record<string, unknown>[] = [];

const jwtPlugin = (jwksUri: string) => ({
  id: 'plugin/test/auth',
  name: 'jwt' as const,
  config: { issuers: [{ issuer: ISS, audiences: ['api'], algorithms: ['RS256'], jwksUri }] },
  source: { kind: 'GatewayPlugin', namespace: 'test', name: 'auth', generation: 1 },
});

const token = (sub: string) =>
  new SignJWT({ sub })
    .setProtectedHeader({ alg: 'RS256', kid: 'k1' })
    .setIssuer(ISS)
    .setAudience('api')
    .setExpirationTime('5m')
    .sign(key.privateKey);

/** The samples of sluice_requests_total for a route. */
async function requestSamples(routeId: string): Promise<number> {
  const metric = await dp.metrics.registry.getSingleMetric('sluice_requests_total')?.get();
  return (metric?.values ?? [])
    .filter((v) => v.labels.route === routeId)
    .reduce((sum, v) => sum + Number(v.value), 0);
}

const linesFor = (requestId: string) => lines.filter((l) => l.requestId === requestId);

beforeAll(async () => {
  key = (await generateKeyPair('RS256', { extractable: true })) as GenerateKeyPairResult;
  const jwks = { keys: [{ ...(await exportJWK(key.publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' }] };
  jwksServer = createServer((_req, res) => {
    fetches++;
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(jwks));
  });
  jwksServer.listen(0, '127.0.0.1');
  await once(jwksServer, 'listening');
  const jwksUri = `http://127.0.0.1:${(jwksServer.address() as AddressInfo).port}/jwks`;
  up = await startUpstream();
  ws = await startWsUpstream();
  const auth = jwtPlugin(jwksUri);
  const routes = Array.from({ length: ROUTES }, (_, i) => route(`r${i}`, 'u', `/r${i}`, { plugins: [auth] }));
  // Every log line, parsed: the tests count them per request id.
  const sink = new Writable({
    write(chunk, _enc, cb) {
      for (const l of String(chunk).split('\n')) if (l) lines.push(JSON.parse(l));
      cb();
    },
  });
  dp = await startTestDataPlane({
    accessLog: true,
    log: pino({ level: 'info' }, sink),
    initialSnapshot: snapshot(
      [
        ...routes,
        route('ws', 'w', '/ws', { plugins: [auth] }),
        route('sync-throw', 'u', '/sync-throw'),
        route('async-throw', 'u', '/async-throw'),
        route('plain', 'u', '/plain'),
      ],
      [upstream('u', up.url), upstream('w', ws.url)],
    ),
  });
});

afterAll(async () => {
  await dp?.close();
  await up?.close();
  await ws?.close();
  jwksServer?.close();
});

describe('plugins are created once per GatewayPlugin per snapshot', () => {
  it(`a jwt plugin with a jwksUri on ${ROUTES} routes fetches the JWKS once, and verifies on every route`, async () => {
    const t = await token('alice');
    for (let i = 0; i < ROUTES; i++) {
      const res = await request(`${dp.proxyUrl}/r${i}`, { headers: { authorization: `Bearer ${t}` } });
      await res.body.dump();
      expect(res.statusCode).toBe(200);
    }
    expect(fetches).toBe(1);
  });

  it('the routes share one live instance: they are bound to the same plugin', () => {
    const rt = dp.holder.current!;
    const chains = rt.routes.filter((r) => r.id.startsWith('route/test/r')).map((r) => r.chain);
    expect(chains).toHaveLength(ROUTES);
    for (const c of chains) expect(c).toEqual(['jwt', 'proxy']);
  });
});

describe('WebSocket upgrades run the same chain runner', () => {
  const open = (headers: Record<string, string>) =>
    new Promise<{ status: number; echo?: string }>((resolve, reject) => {
      const client = new WebSocket(`${dp.proxyUrl.replace('http', 'ws')}/ws`, { headers });
      client.on('unexpected-response', (_req, res) => resolve({ status: res.statusCode ?? 0 }));
      client.on('open', () => client.send('hello'));
      client.on('message', (data) => {
        resolve({ status: 101, echo: String(data) });
        client.close();
      });
      client.on('error', reject);
    });

  it('a jwt-protected route upgrades with a valid token seen for the first time (asynchronous verification)', async () => {
    const fresh = await token('ws-user-never-seen-before');
    expect(await open({ authorization: `Bearer ${fresh}` })).toEqual({ status: 101, echo: 'echo:hello' });
    const upgrade = ws.upgrades.at(-1)!;
    expect(upgrade.headers.authorization).toBe(`Bearer ${fresh}`);
  });

  it('refuses a bad token with 401 and never reaches the upstream', async () => {
    const before = ws.upgrades.length;
    const bad = `${(await token('mallory')).slice(0, -4)}AAAA`;
    expect(await open({ authorization: `Bearer ${bad}` })).toEqual({ status: 401 });
    expect(await open({})).toEqual({ status: 401 });
    expect(ws.upgrades.length).toBe(before);
  });
});

describe('a hook that throws', () => {
  const inject = (id: string, hook: () => void | Promise<void>) => {
    const r = dp.holder.current!.routes.find((x) => x.id === id)!;
    r.requestHooks = [hook];
  };

  it.each([
    [
      'synchronously',
      'sync-throw',
      () => {
        throw new Error('boom (sync)');
      },
    ],
    ['by rejecting', 'async-throw', () => Promise.reject(new Error('boom (async)'))],
  ] as const)(
    '%s: one 500 problem, one log line with the error, one metric sample; the process serves on',
    async (_how, name, hook) => {
      const id = `route/test/${name}/${name}/0`;
      inject(id, hook);
      const samples = await requestSamples(id);
      const res = await request(`${dp.proxyUrl}/${name}`, { headers: { 'x-request-id': `req-${name}` } });
      const body = (await res.body.json()) as { code: string; requestId: string };
      expect(res.statusCode).toBe(500);
      expect(res.headers['content-type']).toBe('application/problem+json');
      expect(body).toMatchObject({ code: 'SLC_ERR_INTERNAL', requestId: `req-${name}` });
      const logged = linesFor(`req-${name}`);
      expect(logged).toHaveLength(1);
      expect(logged[0]).toMatchObject({ level: 50, route: id, status: 500, error: 'SLC_ERR_INTERNAL' });
      expect(JSON.stringify(logged[0].err)).toContain('boom');
      expect(await requestSamples(id)).toBe(samples + 1);
      const after = await request(`${dp.proxyUrl}/plain`);
      await after.body.dump();
      expect(after.statusCode).toBe(200);
    },
  );
});

describe('requests refused at ingress', () => {
  it('a request for no route gets one access-log line and one metric sample', async () => {
    const samples = await requestSamples('(none)');
    const res = await request(`${dp.proxyUrl}/nowhere`);
    const body = (await res.body.json()) as { code: string; requestId: string };
    expect(res.statusCode).toBe(404);
    expect(body.code).toBe('SLC_ERR_ROUTE_NOT_FOUND');
    const logged = linesFor(body.requestId);
    expect(logged).toHaveLength(1);
    expect(logged[0]).toMatchObject({ status: 404, error: 'SLC_ERR_ROUTE_NOT_FOUND', path: '/nowhere' });
    expect(await requestSamples('(none)')).toBe(samples + 1);
  });

  it('a method the gateway does not proxy gets 405 with Allow, logged and counted', async () => {
    const samples = await requestSamples('(none)');
    const reply = await rawRequest(dp.proxyUrl, 'PROPFIND /plain HTTP/1.1\r\nHost: x\r\n\r\n');
    expect(statusOf(reply)).toBe(405);
    expect(reply).toMatch(/\r\nallow: GET, HEAD, POST, PUT, DELETE, PATCH, OPTIONS, TRACE\r\n/i);
    const requestId = /"requestId":"([^"]+)"/.exec(reply)?.[1] ?? '';
    expect(linesFor(requestId)).toMatchObject([{ status: 405, error: 'SLC_ERR_METHOD_NOT_ALLOWED' }]);
    expect(await requestSamples('(none)')).toBe(samples + 1);
  });
});
