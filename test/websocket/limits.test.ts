/**
 * WebSockets through a data plane, with ws clients and a real ws upstream: jwt on the upgrade,
 * the message-size limit (text, binary, fragmented, both directions), the idle timeout and what
 * keeps a socket alive, the per-process bound, the metrics, and config swaps under message load.
 * Limits are small so that the suite stays fast.
 */
import { once } from 'node:events';
import type { IncomingMessage } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { Snapshot } from '../../dataplane/config/route-table.ts';
import type { DataPlane } from '../../dataplane/main.ts';
import { startTestDataPlane } from '../helpers/servers.ts';
import { route, snapshot, transformer, upstream } from '../helpers/tables.ts';
import { startWsUpstream } from '../helpers/ws-upstream.ts';

const IDLE_MS = 400;
const MAX_BYTES = 1024;
const HS_SECRET = 'a-websocket-test-secret-of-32-bytes!!';
const jwt = {
  id: 'plugin/test/jwt',
  name: 'jwt' as const,
  config: {
    issuers: [
      {
        issuer: 'ws-issuer',
        audiences: ['live'],
        algorithms: ['HS256'],
        keys: [
          { secretKeyRef: { name: 'jwt', key: 'hs' }, value: Buffer.from(HS_SECRET).toString('base64') },
        ],
      },
    ],
  },
  source: { kind: 'GatewayPlugin' as const, namespace: 'test', name: 'jwt', generation: 1 },
};

let up: Awaited<ReturnType<typeof startWsUpstream>>;
let dp: DataPlane;
const table = (version: string): Snapshot =>
  snapshot(
    [
      route('live', 'ws', '/live', {
        plugins: [transformer('v', { add: { headers: [`X-Gateway-Version:${version}`] } })],
      }),
      route('secure', 'ws', '/secure', { plugins: [jwt] }),
      route('metered', 'ws', '/metered'),
      // Its own limits (GatewayRoute routes[].websocket): a larger message, no idle timeout.
      route('own', 'ws', '/own', { websocket: { idleTimeoutMs: 0, maxMessageBytes: 4 * MAX_BYTES } }),
    ],
    [upstream('ws', up.url)],
  );

beforeAll(async () => {
  up = await startWsUpstream();
  dp = await startTestDataPlane({
    wsIdleTimeoutMs: IDLE_MS,
    wsMaxMessageBytes: MAX_BYTES,
    initialSnapshot: table('v1'),
  });
});
afterAll(async () => {
  await dp?.close();
  await up?.close();
});

const urlOf = (d: DataPlane, path: string) => `${d.proxyUrl.replace('http', 'ws')}${path}`;

async function connect(d: DataPlane, path: string, opts?: WebSocket.ClientOptions): Promise<WebSocket> {
  const client = new WebSocket(urlOf(d, path), opts);
  await once(client, 'open');
  return client;
}

function closeCode(client: WebSocket): Promise<number> {
  return new Promise((resolve) => client.once('close', (code) => resolve(code)));
}

/** Resolves when `count` messages have arrived (several can arrive in one tick: once() would miss some). */
function messages(client: WebSocket, count: number): Promise<void> {
  let got = 0;
  return new Promise((resolve) =>
    client.on('message', () => {
      if (++got === count) resolve();
    }),
  );
}

/** The upgrade's refusal: status and problem body. */
async function refusal(
  client: WebSocket,
): Promise<{ status: number; type: string; body: { code?: string } }> {
  const [, res] = (await once(client, 'unexpected-response')) as [unknown, IncomingMessage];
  let text = '';
  for await (const chunk of res) text += chunk;
  return { status: res.statusCode ?? 0, type: String(res.headers['content-type']), body: JSON.parse(text) };
}

/** One sample of /metrics, by name and labels (0 when the series does not exist). */
async function metric(d: DataPlane, name: string, labels: Record<string, string> = {}): Promise<number> {
  const text = await d.metrics.registry.metrics();
  for (const line of text.split('\n')) {
    const m = /^(\w+)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (m === null || m[1] !== name) continue;
    const have = m[2] ?? '';
    if (Object.entries(labels).every(([k, v]) => have.includes(`${k}="${v}"`))) return Number(m[3]);
  }
  return 0;
}

const routeId = (name: string) => `route/test/${name}/${name}/0`;

describe('jwt on the upgrade', () => {
  it('refuses an upgrade without a token (401 problem, nothing reaches the upstream) and relays one with a token', async () => {
    const before = up.upgrades.length;
    const refused = await refusal(new WebSocket(urlOf(dp, '/secure')));
    expect(refused.status).toBe(401);
    expect(refused.type).toBe('application/problem+json');
    expect(refused.body.code).toBe('SLC_ERR_CREDENTIALS_MISSING');
    expect(up.upgrades.length).toBe(before);

    const token = await new SignJWT({ sub: 'ws-user' })
      .setProtectedHeader({ alg: 'HS256' })
      .setIssuer('ws-issuer')
      .setAudience('live')
      .setExpirationTime('5m')
      .sign(new TextEncoder().encode(HS_SECRET));
    const client = await connect(dp, '/secure', { headers: { authorization: `Bearer ${token}` } });
    client.send('hi');
    const [msg] = await once(client, 'message');
    expect(String(msg)).toBe('echo:hi');
    expect(up.upgrades.length).toBe(before + 1);
    client.close();
    await closeCode(client);

    expect(
      await metric(dp, 'sluice_websocket_connections_total', { route: routeId('secure'), result: 'refused' }),
    ).toBe(1);
    expect(
      await metric(dp, 'sluice_websocket_connections_total', {
        route: routeId('secure'),
        result: 'accepted',
      }),
    ).toBe(1);
  });
});

describe('message size limit', () => {
  it('a message at the limit is relayed both ways', async () => {
    const client = await connect(dp, '/live');
    client.send(Buffer.alloc(MAX_BYTES, 7), { binary: true });
    const [msg] = await once(client, 'message');
    expect((msg as Buffer).length).toBe(MAX_BYTES);
    client.close();
    expect(await closeCode(client)).toBe(1005); // closed by the client without a code: the echo of its Close
  });

  it.each([
    ['a text message', (c: WebSocket) => c.send('x'.repeat(MAX_BYTES + 1))],
    ['a binary message', (c: WebSocket) => c.send(Buffer.alloc(MAX_BYTES + 1), { binary: true })],
    [
      'a fragmented message whose fragments sum over the limit',
      (c: WebSocket) => {
        c.send(Buffer.alloc(600), { binary: true, fin: false });
        c.send(Buffer.alloc(600), { binary: true, fin: true });
      },
    ],
    // The echo adds "echo:": 1020 bytes go up, 1025 come back, over the limit towards the client.
    ['a message from the upstream', (c: WebSocket) => c.send('y'.repeat(MAX_BYTES - 4))],
  ])('%s over the limit closes the socket with 1009 on both sides', async (_name, send) => {
    const tooBig = await metric(dp, 'sluice_websocket_closed_total', {
      route: routeId('live'),
      reason: 'too_big',
    });
    const upstreamCloses = up.closes.length;
    const client = await connect(dp, '/live');
    const code = closeCode(client);
    send(client);
    expect(await code).toBe(1009);
    for (let i = 0; i < 100 && up.closes.length === upstreamCloses; i++) await sleep(10);
    expect(up.closes.slice(upstreamCloses)).toEqual([1009]);
    expect(
      await metric(dp, 'sluice_websocket_closed_total', { route: routeId('live'), reason: 'too_big' }),
    ).toBe(tooBig + 1);
  });
});

describe('idle timeout', () => {
  it(`no frame either way for ${IDLE_MS} ms closes with 1001 on both sides`, async () => {
    const upstreamCloses = up.closes.length;
    const client = await connect(dp, '/live');
    const start = Date.now();
    expect(await closeCode(client)).toBe(1001);
    const elapsed = Date.now() - start;
    expect(elapsed).toBeGreaterThanOrEqual(IDLE_MS - 20);
    expect(elapsed).toBeLessThan(IDLE_MS + 1000);
    for (let i = 0; i < 100 && up.closes.length === upstreamCloses; i++) await sleep(10);
    expect(up.closes.slice(upstreamCloses)).toEqual([1001]);
    expect(
      await metric(dp, 'sluice_websocket_closed_total', { route: routeId('live'), reason: 'idle' }),
    ).toBe(1);
  });

  it.each([
    ['pings', (c: WebSocket) => c.ping()],
    ['messages', (c: WebSocket) => c.send('tick')],
  ])('%s keep it open past the timeout', async (_name, activity) => {
    const client = await connect(dp, '/live');
    let closed = false;
    client.once('close', () => {
      closed = true;
    });
    for (let t = 0; t < IDLE_MS * 2.5; t += IDLE_MS / 4) {
      activity(client);
      await sleep(IDLE_MS / 4);
    }
    expect(closed).toBe(false);
    expect(client.readyState).toBe(WebSocket.OPEN);
    // Then silence: it closes.
    expect(await closeCode(client)).toBe(1001);
  });
});

describe("a route's own limits", () => {
  it("take the place of the data plane's: a larger message passes, one over its own limit gets 1009", async () => {
    const client = await connect(dp, '/own');
    client.send(Buffer.alloc(4 * MAX_BYTES, 1), { binary: true }); // binary: echoed as it is
    const [msg] = await once(client, 'message');
    expect((msg as Buffer).length).toBe(4 * MAX_BYTES);
    const code = closeCode(client);
    client.send(Buffer.alloc(4 * MAX_BYTES + 1), { binary: true });
    expect(await code).toBe(1009);
  });

  it("idleTimeout 0s: a silent socket stays open past the data plane's idle timeout", async () => {
    const client = await connect(dp, '/own');
    await sleep(IDLE_MS * 2);
    expect(client.readyState).toBe(WebSocket.OPEN);
    client.send('still here');
    const [msg] = await once(client, 'message');
    expect(String(msg)).toBe('echo:still here');
    client.close();
    await closeCode(client);
  });
});

describe('metrics', () => {
  it('counts open sockets, messages each way, and how sockets ended', async () => {
    const labels = { route: routeId('metered') };
    const open0 = await metric(dp, 'sluice_websocket_connections');
    const client = await connect(dp, '/metered');
    expect(await metric(dp, 'sluice_websocket_connections')).toBe(open0 + 1);
    const replies = messages(client, 5);
    for (const m of ['a', 'b', 'c']) client.send(m);
    client.send(Buffer.from([1]), { binary: true });
    client.send(Buffer.from([2]), { binary: true });
    await replies;
    client.ping(); // control frames are not messages
    await once(client, 'pong');
    expect(await metric(dp, 'sluice_websocket_messages_total', { ...labels, direction: 'to_upstream' })).toBe(
      5,
    );
    expect(await metric(dp, 'sluice_websocket_messages_total', { ...labels, direction: 'to_client' })).toBe(
      5,
    );
    client.close(1000);
    expect(await closeCode(client)).toBe(1000);
    expect(await metric(dp, 'sluice_websocket_connections')).toBe(open0);
    expect(await metric(dp, 'sluice_websocket_closed_total', { ...labels, reason: 'normal' })).toBe(1);
    expect(await metric(dp, 'sluice_websocket_connections_total', { ...labels, result: 'accepted' })).toBe(1);
  });

  it('an upstream that drops the connection without a Close counts as upstream_error; the client gets 1014', async () => {
    const client = await connect(dp, '/metered');
    const code = closeCode(client);
    up.terminateAll();
    expect(await code).toBe(1014);
    expect(
      await metric(dp, 'sluice_websocket_closed_total', {
        route: routeId('metered'),
        reason: 'upstream_error',
      }),
    ).toBe(1);
  });
});

describe('a config swap never closes an open WebSocket', () => {
  it('swaps snapshots while messages flow: every message arrives, in order, on the same socket, and is counted', async () => {
    const labels = { route: routeId('live') };
    const up0 = await metric(dp, 'sluice_websocket_messages_total', { ...labels, direction: 'to_upstream' });
    const down0 = await metric(dp, 'sluice_websocket_messages_total', { ...labels, direction: 'to_client' });
    const client = await connect(dp, '/live');
    const replies: string[] = [];
    client.on('message', (m) => replies.push(String(m)));
    let closed = false;
    client.once('close', () => {
      closed = true;
    });
    const N = 400;
    let swaps = 0;
    for (let i = 0; i < N; i++) {
      client.send(`m${i}`);
      if (i % 10 === 0) {
        const r = dp.holder.apply(table(swaps % 2 === 0 ? 'v2' : 'v1'));
        expect(r.result).toBe('applied');
        swaps++;
        await sleep(1);
      }
    }
    for (let i = 0; i < 300 && replies.length < N; i++) await sleep(10);
    expect(closed).toBe(false);
    expect(swaps).toBe(N / 10);
    expect(replies).toEqual(Array.from({ length: N }, (_, i) => `echo:m${i}`));
    expect(await metric(dp, 'sluice_websocket_messages_total', { ...labels, direction: 'to_upstream' })).toBe(
      up0 + N,
    );
    expect(await metric(dp, 'sluice_websocket_messages_total', { ...labels, direction: 'to_client' })).toBe(
      down0 + N,
    );
    client.close();
    await closeCode(client);
  });
});

describe('the bound on open WebSockets (--max-websockets)', () => {
  let small: DataPlane;
  beforeAll(async () => {
    small = await startTestDataPlane({ maxWebSockets: 2, initialSnapshot: table('v1') });
  });
  afterAll(() => small?.close());

  it('past N open sockets an upgrade gets a 503 problem; a closed socket frees its slot', async () => {
    const a = await connect(small, '/live');
    const b = await connect(small, '/live');
    const refused = await refusal(new WebSocket(urlOf(small, '/live')));
    expect(refused).toMatchObject({ status: 503, type: 'application/problem+json' });
    expect(refused.body.code).toBe('SLC_ERR_WEBSOCKET_LIMIT');
    expect(
      await metric(small, 'sluice_websocket_connections_total', { route: routeId('live'), result: 'limit' }),
    ).toBe(1);
    // Still working while the third was refused.
    b.send('still');
    expect(String((await once(b, 'message'))[0])).toBe('echo:still');

    a.close();
    await closeCode(a);
    let c: WebSocket | null = null;
    for (let i = 0; i < 50 && c === null; i++) {
      // The gateway frees the slot when its side of the socket has closed, just after the client's.
      c = await connect(small, '/live').catch(() => null);
      if (c === null) await sleep(20);
    }
    expect(c?.readyState).toBe(WebSocket.OPEN);
    c?.close();
    b.close();
    await Promise.all([closeCode(b), c && closeCode(c)]);
  });
});
