/**
 * Gateway listener ports follow the snapshots: a snapshot that keeps a port keeps its server
 * (open connections stay and see the new routes), one that drops a port closes it (new
 * connections refused) while its requests in flight finish (HTTP/1.1 and h2c) and its
 * connections end right after, without waiting for the drain timeout; a port another process
 * holds does not fail the apply: GET /config and sluice_listener_port_bound say it is not bound
 * (the failures are counted) until it is freed, and then it binds. Shutting the data plane
 * down drains listener ports as it drains the proxy port.
 */
import { once } from 'node:events';
import { Agent as HttpAgent, get as httpGet } from 'node:http';
import { createServer } from 'node:net';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Route, Snapshot } from '../../dataplane/config/route-table.ts';
import type { DataPlane } from '../../dataplane/main.ts';
import { h2Request, h2Session, listenersOf, untilPort } from '../helpers/listeners.ts';
import { fetchMetrics, parseMetrics } from '../helpers/processes.ts';
import { rawRequest, statusOf } from '../helpers/raw-http.ts';
import { freePort, startTestDataPlane, startUpstream, type Upstream } from '../helpers/servers.ts';
import { listener, route, snapshot, upstream } from '../helpers/tables.ts';

let up: Upstream;
let dp: DataPlane;
beforeAll(async () => {
  // /slow: the answer after 500 ms; /stream: the headers and a first chunk at once, the rest after 500 ms.
  up = await startUpstream((req, res) => {
    if (req.url?.startsWith('/slow')) setTimeout(() => res.end('done'), 500);
    else if (req.url?.startsWith('/stream')) {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('do');
      setTimeout(() => res.end('ne'), 500);
    } else return;
    return true;
  });
  // Well above what the tests allow a drained connection to take: ending it is the port's doing.
  dp = await startTestDataPlane({ drainTimeoutMs: 10_000 });
});
afterAll(async () => {
  await dp?.close();
  await up?.close();
});

/** One catch-all listener per port, each with routes on `paths`. */
function withPorts(ports: number[], paths: string[]): Snapshot {
  const routes: Route[] = ports.flatMap((p) =>
    paths.map((path) =>
      route(`p${p}${path.replace(/\W/g, '-')}`, 'u', path, { listeners: [`listener/test/gw/l${p}`] }),
    ),
  );
  return snapshot(routes, [upstream('u', up.url)], { listeners: ports.map((p) => listener(`l${p}`, p)) });
}

const put = async (s: Snapshot) => {
  const r = await request(`${dp.adminUrl}/config`, {
    method: 'PUT',
    body: JSON.stringify(s),
    headers: { 'content-type': 'application/json', authorization: 'Bearer test-admin-token' },
  });
  return { status: r.statusCode, body: (await r.body.json()) as { result: string } };
};

/** GET on a keep-alive agent with one socket: the status and whether the request reused the socket. */
function keptAliveGet(
  agent: HttpAgent,
  port: number,
  path: string,
): Promise<{ status: number; reused: boolean }> {
  return new Promise((resolve, reject) => {
    const req = httpGet({ host: '127.0.0.1', port, path, agent }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0, reused: req.reusedSocket }));
    });
    req.on('error', reject);
  });
}

/** The body of a raw HTTP/1.1 reply, chunked or not. */
function bodyOf(reply: string): string {
  const split = reply.indexOf('\r\n\r\n');
  const body = reply.slice(split + 4);
  if (!/\r\ntransfer-encoding: chunked/i.test(reply.slice(0, split))) return body;
  let out = '';
  for (let i = 0; ; ) {
    const nl = body.indexOf('\r\n', i);
    const size = Number.parseInt(body.slice(i, nl), 16);
    if (!(size > 0)) return out;
    out += body.slice(nl + 2, nl + 2 + size);
    i = nl + 2 + size + 2;
  }
}

describe('listener ports across snapshots', () => {
  it('keeps a port a new snapshot keeps: its open connections stay and serve the new routes', async () => {
    const port = await freePort();
    expect((await put(withPorts([port], ['/a']))).body.result).toBe('applied');
    await untilPort(dp, port);
    const session = await h2Session(`http://127.0.0.1:${port}`);
    const agent = new HttpAgent({ keepAlive: true, maxSockets: 1 });
    try {
      let goaway = false;
      session.on('goaway', () => {
        goaway = true;
      });
      expect((await h2Request(session, 'x.test', '/a')).status).toBe(200);
      expect(await keptAliveGet(agent, port, '/a')).toEqual({ status: 200, reused: false });

      expect((await put(withPorts([port], ['/b']))).body.result).toBe('applied');
      expect((await h2Request(session, 'x.test', '/b')).status).toBe(200);
      expect((await h2Request(session, 'x.test', '/a')).status).toBe(404);
      expect(await keptAliveGet(agent, port, '/b')).toEqual({ status: 200, reused: true });
      expect(goaway).toBe(false);
      expect(await listenersOf(dp.adminUrl)).toEqual([
        { id: `listener/test/gw/l${port}`, port, bound: true },
      ]);
    } finally {
      session.close();
      agent.destroy();
    }
  });

  it('closes a port a new snapshot drops: refused at once, in-flight requests finish, then the connections end', async () => {
    const [gone, stays] = [await freePort(), await freePort()];
    await put(withPorts([gone, stays], ['/']));
    await untilPort(dp, gone);
    const session = await h2Session(`http://127.0.0.1:${gone}`);
    const goaway = once(session, 'goaway');
    const t0 = Date.now();
    // Kept-alive HTTP/1.1 requests, one answered before the port closes (its headers sent), one after.
    const h1 = ['/stream/h1', '/slow/h1'].map((path) =>
      rawRequest(`http://127.0.0.1:${gone}`, `GET ${path} HTTP/1.1\r\nHost: x.test\r\n\r\n`, 8_000).then(
        (reply) => ({ reply, ms: Date.now() - t0 }),
      ),
    );
    const h2 = h2Request(session, 'x.test', '/slow/h2');
    await new Promise((r) => setTimeout(r, 150));

    expect((await put(withPorts([stays], ['/']))).body.result).toBe('applied');
    await expect(request(`http://127.0.0.1:${gone}/`)).rejects.toMatchObject({ code: 'ECONNREFUSED' });
    expect((await request(`http://127.0.0.1:${stays}/`)).statusCode).toBe(200);

    expect(await h2).toMatchObject({ status: 200, body: 'done' });
    await goaway;
    for (const { reply, ms } of await Promise.all(h1)) {
      expect(statusOf(reply)).toBe(200);
      expect(bodyOf(reply)).toBe('done');
      // Closed by the data plane once answered: not kept alive (72 s), nor cut at the drain timeout (10 s).
      expect(ms).toBeLessThan(3_000);
    }
    expect((await listenersOf(dp.adminUrl)).map((l) => l.port)).toEqual([stays]);
  });

  it('applies a snapshot whose port is taken, reports it unbound, and binds once the port is free', async () => {
    const port = await freePort();
    const blocker = createServer().listen(port, '127.0.0.1');
    await once(blocker, 'listening');
    try {
      expect(await put(withPorts([port], ['/']))).toMatchObject({ status: 200, body: { result: 'applied' } });
      await untilPort(dp, port, false);
      const [state] = await listenersOf(dp.adminUrl);
      expect(state).toMatchObject({ port, bound: false, error: expect.stringMatching(/^EADDRINUSE/) });
      const samples = parseMetrics(await fetchMetrics(dp.adminUrl));
      const sample = (name: string) => samples.find((s) => s.name === name && s.labels.port === String(port));
      expect(sample('sluice_listener_port_bound')?.value).toBe(0);
      expect(sample('sluice_listener_bind_failures_total')?.value).toBeGreaterThanOrEqual(1);
      // The proxy port serves on meanwhile.
      expect((await request(`${dp.proxyUrl}/`)).statusCode).toBe(404);
    } finally {
      await new Promise((r) => blocker.close(r));
    }
    await untilPort(dp, port, true, 10_000);
    expect((await listenersOf(dp.adminUrl))[0]).toEqual({
      id: `listener/test/gw/l${port}`,
      port,
      bound: true,
    });
    const samples = parseMetrics(await fetchMetrics(dp.adminUrl));
    expect(
      samples.find((s) => s.name === 'sluice_listener_port_bound' && s.labels.port === String(port))?.value,
    ).toBe(1);
    expect((await request(`http://127.0.0.1:${port}/`)).statusCode).toBe(200);
  });
});

describe('listener ports on shutdown', () => {
  it('let requests in flight finish, then close, well before the drain timeout', async () => {
    const port = await freePort();
    const own = await startTestDataPlane({
      drainTimeoutMs: 10_000,
      initialSnapshot: withPorts([port], ['/']),
    });
    try {
      await untilPort(own, port);
      const session = await h2Session(`http://127.0.0.1:${port}`);
      const h2 = h2Request(session, 'x.test', '/slow/h2');
      const h1 = request(`http://127.0.0.1:${port}/stream/h1`).then(async (r) => ({
        status: r.statusCode,
        body: await r.body.text(),
      }));
      await new Promise((r) => setTimeout(r, 150));
      const t0 = Date.now();
      await own.close();
      expect(Date.now() - t0).toBeLessThan(3_000);
      expect(await h2).toMatchObject({ status: 200, body: 'done' });
      expect(await h1).toEqual({ status: 200, body: 'done' });
      await expect(request(`http://127.0.0.1:${port}/`)).rejects.toMatchObject({ code: 'ECONNREFUSED' });
    } finally {
      await own.close();
    }
  });
});
