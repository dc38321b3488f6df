/**
 * The edge rules of ARCHITECTURE §6.1 that issue 9 completes, one test per rule, through a real
 * data plane: hop-by-hop response headers never reach the client (nor a replay); upgrades other
 * than WebSocket are served as plain HTTP/1.1 after the whole chain; one credential, one
 * reading; the client address behind trusted proxies; jwt maxLifetime.
 */
import { execFile } from 'node:child_process';
import { createHash, createHmac } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type Server, type Socket } from 'node:net';
import { Writable } from 'node:stream';
import { promisify } from 'node:util';
import { pino } from 'pino';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DataPlane } from '../../dataplane/main.ts';
import { rawRequest, statusOf } from '../helpers/raw-http.ts';
import { startTestDataPlane, startUpstream, type Upstream } from '../helpers/servers.ts';
import { idempotencyPlugin, rateLimitPlugin, route, snapshot, upstream } from '../helpers/tables.ts';

const run = promisify(execFile);
const API_KEY = 'k-0123456789abcdef';
const HS_SECRET = 'a-shared-secret-of-32-bytes-or-more!!';
const ISS = 'https://idp.test/';

const source = (name: string) => ({ kind: 'GatewayPlugin', namespace: 'test', name, generation: 1 });
const keyAuth = {
  id: 'plugin/test/keys',
  name: 'key-auth' as const,
  config: {
    consumers: [
      {
        name: 'alice',
        secretKeyRef: { name: 'keys', key: 'alice' },
        sha256: createHash('sha256').update(API_KEY).digest('hex'),
      },
    ],
  },
  source: source('keys'),
};
const jwtShort = {
  id: 'plugin/test/short',
  name: 'jwt' as const,
  config: {
    issuers: [
      {
        issuer: ISS,
        audiences: ['api'],
        algorithms: ['HS256'],
        maxLifetime: '24h',
        keys: [
          { secretKeyRef: { name: 'jwt', key: 'hs' }, value: Buffer.from(HS_SECRET).toString('base64') },
        ],
      },
    ],
  },
  source: source('short'),
};

/** An upstream speaking raw HTTP/1.1, so its response can carry any header. */
function rawUpstream(response: string): Promise<{ url: string; server: Server }> {
  const server = createServer((socket: Socket) => {
    let buffered = '';
    socket.on('data', (d) => {
      buffered += d.toString('latin1');
      const end = buffered.indexOf('\r\n\r\n');
      if (end < 0) return;
      const length = Number(/\r\ncontent-length: *(\d+)/i.exec(buffered.slice(0, end))?.[1] ?? 0);
      if (buffered.length < end + 4 + length) return;
      buffered = buffered.slice(end + 4 + length);
      socket.write(response);
    });
    socket.on('error', () => {});
  });
  server.listen(0, '127.0.0.1');
  return once(server, 'listening').then(() => ({
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
    server,
  }));
}

const HOP_BY_HOP_RESPONSE =
  'HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n' +
  'Connection: X-Internal, keep-alive\r\nX-Internal: secret\r\nKeep-Alive: timeout=1234\r\n' +
  'Proxy-Connection: keep-alive\r\nTE: trailers\r\nTrailer: X-Checksum\r\nUpgrade: h2c\r\n' +
  'X-Kept: yes\r\n\r\nok';

let up: Upstream;
let raw: { url: string; server: Server };
let dp: DataPlane;
let behind: DataPlane;
const lines: Record<string, unknown>[] = [];

beforeAll(async () => {
  up = await startUpstream();
  raw = await rawUpstream(HOP_BY_HOP_RESPONSE);
  dp = await startTestDataPlane({
    initialSnapshot: snapshot(
      [
        route('hop', 'r', '/hop'),
        route('hop-idem', 'r', '/hop-idem', { plugins: [idempotencyPlugin('idem')] }),
        route('keyed', 'u', '/keyed', { plugins: [keyAuth] }),
        route('short', 'u', '/short', { plugins: [jwtShort] }),
        route('plain', 'u', '/plain'),
      ],
      [upstream('u', up.url), upstream('r', raw.url)],
    ),
  });
  const sink = new Writable({
    write(chunk, _enc, cb) {
      for (const l of String(chunk).split('\n')) if (l) lines.push(JSON.parse(l));
      cb();
    },
  });
  behind = await startTestDataPlane({
    trustedProxies: ['127.0.0.1', '10.0.0.0/8'],
    accessLog: true,
    log: pino({ level: 'info' }, sink),
    initialSnapshot: snapshot(
      [
        route('by-ip', 'u', '/by-ip', {
          plugins: [rateLimitPlugin('ip', { minute: 1, policy: 'local', limitBy: 'ip' })],
        }),
      ],
      [upstream('u', up.url)],
    ),
  });
});

afterAll(async () => {
  await dp?.close();
  await behind?.close();
  await up?.close();
  raw?.server.close();
});

describe('rule 5: responses are framed by us', () => {
  const check = (headers: Record<string, unknown>) => {
    for (const name of ['x-internal', 'proxy-connection', 'te', 'trailer', 'upgrade'])
      expect(headers[name], name).toBeUndefined();
    expect(headers['keep-alive']).not.toBe('timeout=1234');
    expect(headers.connection ?? 'keep-alive').toBe('keep-alive');
    expect(headers['x-kept']).toBe('yes');
  };

  it('hop-by-hop response headers, and those the upstream names in Connection, never reach the client', async () => {
    const res = await request(`${dp.proxyUrl}/hop`);
    expect(await res.body.text()).toBe('ok');
    check(res.headers);
  });

  it('nor a replay of an idempotent request', async () => {
    const key = 'edge-rules-hop-by-hop-replay-0000000001';
    const send = () =>
      request(`${dp.proxyUrl}/hop-idem`, {
        method: 'POST',
        headers: { 'idempotency-key': key, authorization: 'Bearer x', 'content-type': 'application/json' },
        body: '{}',
      });
    const first = await send();
    await first.body.text();
    const replay = await send();
    expect(await replay.body.text()).toBe('ok');
    expect(replay.headers['idempotent-replayed']).toBe('true');
    check(replay.headers);
  });
});

describe('upgrades the gateway does not serve are ignored, not refused', () => {
  it('curl --http2 on an http:// URL gets 200 over HTTP/1.1, and the upstream sees no upgrade', async () => {
    const before = up.seen.length;
    const { stdout } = await run('curl', [
      '-s',
      '--http2',
      '-o',
      '/dev/null',
      '-w',
      '%{http_code} %{http_version}',
      `${dp.proxyUrl}/plain`,
    ]);
    expect(stdout).toBe('200 1.1');
    const seen = up.seen.slice(before);
    expect(seen).toHaveLength(1);
    for (const name of ['upgrade', 'http2-settings']) expect(seen[0].headers[name]).toBeUndefined();
    // The upstream connection's own header (undici's keep-alive), never the client's Upgrade tokens.
    expect(seen[0].headers.connection ?? 'keep-alive').toBe('keep-alive');
  });

  it('the whole chain runs: an h2c upgrade to a key-auth route without a key is a 401, never a 101', async () => {
    const reply = await rawRequest(
      dp.proxyUrl,
      'GET /keyed HTTP/1.1\r\nHost: x\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAoAAAAAIAAAAA\r\n\r\n',
      1_000,
    );
    expect(statusOf(reply)).toBe(401);
    const ok = await rawRequest(
      dp.proxyUrl,
      `GET /keyed HTTP/1.1\r\nHost: x\r\nX-API-Key: ${API_KEY}\r\nConnection: Upgrade, close\r\nUpgrade: h2c\r\n\r\n`,
    );
    expect(statusOf(ok)).toBe(200);
  });
});

describe('one credential, one reading', () => {
  it('two Authorization lines are a 400 before any plugin runs, never joined', async () => {
    const before = up.seen.length;
    const reply = await rawRequest(
      dp.proxyUrl,
      'GET /plain HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer a\r\nAuthorization: Bearer b\r\n\r\n',
    );
    expect(statusOf(reply)).toBe(400);
    expect(reply).toContain('SLC_ERR_BAD_HEADER');
    expect(up.seen.length).toBe(before);
  });

  it('two lines of the header key-auth reads are a 400, even when one holds a valid key', async () => {
    const reply = await rawRequest(
      dp.proxyUrl,
      `GET /keyed HTTP/1.1\r\nHost: x\r\nX-API-Key: ${API_KEY}\r\nX-API-Key: other\r\nConnection: close\r\n\r\n`,
    );
    expect(statusOf(reply)).toBe(400);
    expect(reply).toContain('SLC_ERR_BAD_HEADER');
  });
});

describe('the client address behind trusted proxies', () => {
  const hit = async (xff?: string) => {
    const res = await request(`${behind.proxyUrl}/by-ip`, { headers: xff ? { 'x-forwarded-for': xff } : {} });
    await res.body.dump();
    return res.statusCode;
  };

  it('is the first untrusted hop from the right of X-Forwarded-For: limitBy ip counts it, the log names it', async () => {
    expect(await hit('203.0.113.7')).toBe(200);
    // The same client through one more trusted proxy: still the same client.
    expect(await hit('203.0.113.7, 10.1.2.3')).toBe(429);
    // A client-written entry on the left proves nothing: the untrusted hop nearest us counts.
    expect(await hit('198.51.100.1, 203.0.113.7')).toBe(429);
    expect(await hit('198.51.100.9')).toBe(200);
    const clients = lines.filter((l) => l.route === 'route/test/by-ip/by-ip/0').map((l) => l.client);
    expect(clients).toEqual(['203.0.113.7', '203.0.113.7', '203.0.113.7', '198.51.100.9']);
  });

  it('without trusted proxies is the socket peer, whatever X-Forwarded-For says', async () => {
    const res1 = await request(`${dp.proxyUrl}/plain`, { headers: { 'x-forwarded-for': '203.0.113.50' } });
    const body = (await res1.body.json()) as { headers: Record<string, string> };
    expect(body.headers['x-forwarded-for']).toBe('127.0.0.1');
  });
});

describe('jwt maxLifetime', () => {
  const b64url = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');
  const hs256 = (payload: Record<string, unknown>) => {
    const head = `${b64url({ alg: 'HS256', typ: 'JWT' })}.${b64url(payload)}`;
    return `${head}.${createHmac('sha256', HS_SECRET).update(head).digest('base64url')}`;
  };
  const now = () => Math.floor(Date.now() / 1000);
  const call = async (payload: Record<string, unknown>) => {
    const res = await request(`${dp.proxyUrl}/short`, {
      headers: { authorization: `Bearer ${hs256({ iss: ISS, aud: 'api', sub: 'u', ...payload })}` },
    });
    await res.body.dump();
    return res.statusCode;
  };

  it('refuses a token whose exp - iat exceeds it, accepts one within it', async () => {
    expect(await call({ iat: now(), exp: now() + 48 * 3600 })).toBe(401);
    expect(await call({ iat: now(), exp: now() + 3600 })).toBe(200);
  });

  it('without iat, measures exp - now', async () => {
    expect(await call({ exp: now() + 25 * 3600 })).toBe(401);
    expect(await call({ exp: now() + 23 * 3600 })).toBe(200);
  });
});
