/**
 * An upstream of protocol h2c (HTTP/2 with prior knowledge; HTTPRouteBackendProtocolH2C's
 * intent: the back end sees HTTP/2 whatever the client spoke), through a real data plane to a
 * real node:http2 server: an HTTP/1.1 client (the fixed proxy port) and an h2c client (a Gateway
 * listener port) both reach it over HTTP/2 with the HTTP/1.1 path's header handling; bodies
 * stream both ways; trailers reach an h2 client, and an HTTP/1.1 client whose TE names them;
 * an upstream reset maps as on HTTP/1.1 (502 before the head, a cut after); a client's cancel
 * cancels the upstream stream; retries go where HTTP/1.1's would. Its sessions: one for many
 * requests, the peer's stream bound honoured, GOAWAY (streams under way finish, new ones take a
 * new session), closed when idle, and an endpoint a snapshot drops drained then closed.
 */
import { Readable } from 'node:stream';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Upstream } from '../../dataplane/config/route-table.ts';
import type { DataPlane } from '../../dataplane/main.ts';
import { type H2cUpstream, startH2cUpstream } from '../helpers/h2c-upstream.ts';
import { h2Request, h2Session, untilPort } from '../helpers/listeners.ts';
import { rawRequest, statusOf } from '../helpers/raw-http.ts';
import { freePort, startTestDataPlane } from '../helpers/servers.ts';
import { listener, route, snapshot, upstream } from '../helpers/tables.ts';
import { until } from '../helpers/until.ts';

let up: H2cUpstream;
let dp: DataPlane;
let port: number;
const started: H2cUpstream[] = [];

const h2c = (id: string, url: string, extra: Partial<Upstream> = {}): Upstream => ({
  ...upstream(id, url),
  protocol: 'h2c',
  ...extra,
});
const retries = {
  attempts: 2,
  statuses: [503],
  backoffBaseMs: 1,
  backoffMaxMs: 5,
  budgetPercent: 100,
  minRetriesPerSecond: 10,
  idempotentBackend: false,
};

/** The main table: /up on the listener port (h2c clients) and on the fixed port (HTTP/1.1), /retry with retries; `more` beside them. */
function table(more: { routes?: ReturnType<typeof route>[]; upstreams?: Upstream[] } = {}) {
  return snapshot(
    [
      route('listen', 'up', '/', { listeners: ['listener/test/gw/h2c'] }),
      route('fixed', 'up', '/up', { stripPrefix: true }),
      route('retry', 'retry', '/retry', { stripPrefix: true }),
      ...(more.routes ?? []),
    ],
    [h2c('up', up.url), h2c('retry', up.url, { retries }), ...(more.upstreams ?? [])],
    { listeners: [listener('h2c', port)] },
  );
}

beforeAll(async () => {
  up = await startH2cUpstream('main');
  started.push(up);
  port = await freePort();
  dp = await startTestDataPlane({ initialSnapshot: table() });
  await untilPort(dp, port);
});

afterAll(async () => {
  await dp?.close();
  await Promise.all(started.map((s) => s.close()));
});

const listenerUrl = () => `http://127.0.0.1:${port}`;
const last = (u: H2cUpstream) => u.seen[u.seen.length - 1];

describe('an h2c upstream sees HTTP/2 whatever the client spoke', () => {
  it('an HTTP/1.1 client: the upstream gets the request over HTTP/2, hop-by-hop headers dropped, forwarding headers set', async () => {
    const reply = await rawRequest(
      dp.proxyUrl,
      'POST /up/things?x=1 HTTP/1.1\r\nHost: app.test\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n' +
        'Connection: close, X-Private\r\nX-Private: dropped\r\nKeep-Alive: timeout=5\r\nX-Kept: yes\r\n' +
        'TE: trailers, deflate\r\n\r\nhello',
    );
    expect(statusOf(reply)).toBe(200);
    expect(reply).toContain('"name":"main"');
    const seen = last(up);
    expect(seen).toMatchObject({ method: 'POST', path: '/things?x=1', body: 'hello' });
    // The upstream answered on its h2 server: the request came as HTTP/2.
    expect(seen.headers[':scheme']).toBe('http');
    expect(seen.headers['x-kept']).toBe('yes');
    expect(seen.headers['x-private']).toBeUndefined();
    expect(seen.headers['keep-alive']).toBeUndefined();
    expect(seen.headers['x-forwarded-for']).toBe('127.0.0.1');
    expect(seen.headers['x-forwarded-proto']).toBe('http');
    expect(seen.headers['x-forwarded-host']).toBe('app.test');
    expect(seen.headers['x-request-id']).toEqual(expect.any(String));
    // TE named trailers: HTTP/2's one TE value is passed on (gRPC servers require it), the rest is not.
    expect(seen.headers.te).toBe('trailers');
  });

  it('an HTTP/1.1 client without TE: no te upstream', async () => {
    const r = await request(`${dp.proxyUrl}/up/plain`);
    await r.body.text();
    expect(r.statusCode).toBe(200);
    expect(last(up).headers.te).toBeUndefined();
  });

  it('an h2c client on a listener port: the same request upstream, te: trailers passed on', async () => {
    const s = await h2Session(listenerUrl());
    try {
      const r = await h2Request(s, 'app.test', '/echo', 'PUT', {
        headers: { te: 'trailers', 'x-kept': 'h2' },
        body: 'put-body',
      });
      expect(r.status).toBe(200);
      expect(JSON.parse(r.body)).toMatchObject({ method: 'PUT', path: '/echo', body: 'put-body' });
      expect(last(up).headers).toMatchObject({
        te: 'trailers',
        'x-kept': 'h2',
        'x-forwarded-host': 'app.test',
      });
    } finally {
      s.close();
    }
  });
});

describe('bodies and trailers', () => {
  it('the request body streams up and the response streams back as they come (a chunk is echoed before the next is sent)', async () => {
    const s = await h2Session(listenerUrl());
    try {
      const stream = s.request({ ':method': 'POST', ':path': '/pipe', ':authority': 'app.test' });
      const got: string[] = [];
      for (const part of ['one', 'two', 'three']) {
        const echoed = new Promise<string>((resolve) =>
          stream.once('data', (c: Buffer) => resolve(c.toString())),
        );
        stream.write(part);
        got.push(await echoed);
      }
      const ended = new Promise((resolve) => stream.on('end', resolve));
      stream.resume();
      stream.end();
      await ended;
      expect(got).toEqual(['one', 'two', 'three']);
      expect(last(up).body).toBe('onetwothree');
    } finally {
      s.close();
    }
  });

  it('an HTTP/1.1 client streams a chunked body up', async () => {
    const r = await request(`${dp.proxyUrl}/up/chunked`, {
      method: 'POST',
      body: Readable.from(['a', 'b', 'c'].map((c) => Buffer.from(c))),
    });
    expect(r.statusCode).toBe(200);
    expect(((await r.body.json()) as { body: string }).body).toBe('abc');
  });

  it('trailers reach an h2 client as trailers', async () => {
    const s = await h2Session(listenerUrl());
    try {
      const r = await h2Request(s, 'app.test', '/trailers');
      expect(r.status).toBe(200);
      expect(r.body).toBe('ab');
      expect(r.trailers).toMatchObject({ 'x-checksum': 'c0ffee', 'x-count': '2' });
    } finally {
      s.close();
    }
  });

  it('trailers reach an HTTP/1.1 client as chunked trailers when its TE names them, else are dropped', async () => {
    const withTe = await request(`${dp.proxyUrl}/up/trailers`, { headers: { te: 'trailers' } });
    expect(await withTe.body.text()).toBe('ab');
    expect(withTe.trailers).toEqual({ 'x-checksum': 'c0ffee', 'x-count': '2' });
    const without = await request(`${dp.proxyUrl}/up/trailers`);
    expect(await without.body.text()).toBe('ab');
    expect(without.trailers).toEqual({});
  });
});

describe('resets and cancels', () => {
  it('an upstream reset before its head is a 502 problem, as on HTTP/1.1', async () => {
    const r = await request(`${dp.proxyUrl}/up/reset-before`);
    const problem = (await r.body.json()) as { code: string };
    expect(r.statusCode).toBe(502);
    expect(problem.code).toBe('SLC_ERR_UPSTREAM_UNAVAILABLE');
  });

  it('an upstream reset after its head cuts the client: an h2 stream is reset, an HTTP/1.1 body is cut', async () => {
    const s = await h2Session(listenerUrl());
    try {
      await expect(h2Request(s, 'app.test', '/reset-after')).rejects.toThrow();
      // The client's session is still good for other streams.
      expect((await h2Request(s, 'app.test', '/fine')).status).toBe(200);
    } finally {
      s.close();
    }
    const r = await request(`${dp.proxyUrl}/up/reset-after`);
    expect(r.statusCode).toBe(200);
    await expect(r.body.text()).rejects.toThrow();
  });

  it("a client's cancel (RST_STREAM) cancels the upstream stream, and the session's other streams go on", async () => {
    const s = await h2Session(listenerUrl());
    try {
      const held = s.request({ ':method': 'GET', ':path': '/hold', ':authority': 'app.test' });
      await new Promise((resolve) => held.once('data', resolve));
      const rec = last(up);
      expect(rec.path).toBe('/hold');
      const beside = h2Request(s, 'app.test', '/slow/200');
      held.close(); // RST_STREAM CANCEL
      await until(() => rec.cut, 3_000);
      expect((await beside).status).toBe(200);
    } finally {
      s.close();
    }
  });

  it('retries as HTTP/1.1 would: a GET answered 503 is tried again, a streamed POST is not', async () => {
    const before = up.seen.length;
    const get = await request(`${dp.proxyUrl}/retry/status/503`);
    await get.body.text();
    expect(get.statusCode).toBe(503);
    expect(up.seen.length - before).toBe(3); // the try and 2 retries
    const post = await request(`${dp.proxyUrl}/retry/status/503`, {
      method: 'POST',
      body: Readable.from([Buffer.from('once')]),
    });
    await post.body.text();
    expect(post.statusCode).toBe(503);
    expect(up.seen.length - before).toBe(4);
  });
});

describe('sessions', () => {
  it('many requests, one after another and at once, share one session', async () => {
    const u = await startH2cUpstream('one');
    started.push(u);
    dp.holder.apply(
      table({ routes: [route('one', 'one', '/one', { stripPrefix: true })], upstreams: [h2c('one', u.url)] }),
    );
    for (let i = 0; i < 5; i++) expect((await request(`${dp.proxyUrl}/one/x`)).statusCode).toBe(200);
    const all = await Promise.all(
      Array.from({ length: 20 }, async () => {
        const r = await request(`${dp.proxyUrl}/one/slow/50`);
        await r.body.text();
        return r.statusCode;
      }),
    );
    expect(all.every((s) => s === 200)).toBe(true);
    expect(u.sessionsOpened()).toBe(1);
    expect(u.maxConcurrent()).toBeGreaterThan(1);
  });

  it("the peer's SETTINGS_MAX_CONCURRENT_STREAMS is honoured: never more streams on a session, none refused", async () => {
    const u = await startH2cUpstream('bound', { settings: { maxConcurrentStreams: 2 } });
    started.push(u);
    dp.holder.apply(
      table({
        routes: [route('bound', 'bound', '/bound', { stripPrefix: true })],
        upstreams: [h2c('bound', u.url)],
      }),
    );
    expect((await request(`${dp.proxyUrl}/bound/warm`)).statusCode).toBe(200);
    const all = await Promise.all(
      Array.from({ length: 8 }, async () => {
        const r = await request(`${dp.proxyUrl}/bound/slow/100`);
        await r.body.text();
        return r.statusCode;
      }),
    );
    expect(all).toEqual(Array(8).fill(200));
    expect(u.maxConcurrent()).toBe(2);
  });

  it('GOAWAY: the stream under way finishes, the next request takes a new session', async () => {
    const u = await startH2cUpstream('goaway');
    started.push(u);
    dp.holder.apply(
      table({
        routes: [route('goaway', 'goaway', '/goaway', { stripPrefix: true })],
        upstreams: [h2c('goaway', u.url)],
      }),
    );
    const slow = request(`${dp.proxyUrl}/goaway/slow/300`);
    await until(() => u.seen.length === 1);
    // A graceful close: GOAWAY with the last stream accepted; that stream may finish.
    for (const s of u.open) s.close();
    const r = await slow;
    expect(r.statusCode).toBe(200);
    expect(((await r.body.json()) as { name: string }).name).toBe('goaway');
    const next = await request(`${dp.proxyUrl}/goaway/after`);
    await next.body.text();
    expect(next.statusCode).toBe(200);
    expect(u.sessionsOpened()).toBe(2);
    expect(u.seen.map((s) => s.session)).toEqual([1, 2]);
  });

  it("a session without streams is closed after the upstream's idleMs", async () => {
    const u = await startH2cUpstream('idle');
    started.push(u);
    dp.holder.apply(
      table({
        routes: [route('idle', 'idle', '/idle', { stripPrefix: true })],
        upstreams: [h2c('idle', u.url, { timeouts: { connectMs: 2_000, responseMs: 5_000, idleMs: 300 } })],
      }),
    );
    const r = await request(`${dp.proxyUrl}/idle/x`);
    await r.body.text();
    expect(u.open.size).toBe(1);
    await until(() => u.open.size === 0, 3_000);
    // The next request dials again.
    expect((await request(`${dp.proxyUrl}/idle/y`)).statusCode).toBe(200);
    expect(u.sessionsOpened()).toBe(2);
  });

  it('an endpoint a snapshot drops is drained: its stream under way finishes, then its session closes', async () => {
    const a = await startH2cUpstream('a');
    const b = await startH2cUpstream('b', { address: '127.0.0.2' });
    started.push(a, b);
    const svc = (endpoints: H2cUpstream[]) =>
      h2c('svc', 'http://svc.test.invalid:8080', {
        endpoints: endpoints.map((e) => ({ address: e.address, port: e.port })),
      });
    const withEndpoints = (endpoints: H2cUpstream[]) =>
      table({ routes: [route('svc', 'svc', '/svc', { stripPrefix: true })], upstreams: [svc(endpoints)] });
    dp.holder.apply(withEndpoints([a]));
    const slow = request(`${dp.proxyUrl}/svc/slow/400`);
    await until(() => a.seen.length === 1);
    dp.holder.apply(withEndpoints([b]));
    const next = await request(`${dp.proxyUrl}/svc/next`);
    expect(((await next.body.json()) as { name: string }).name).toBe('b');
    expect(a.open.size).toBe(1);
    const r = await slow;
    expect(r.statusCode).toBe(200);
    expect(((await r.body.json()) as { name: string; authority: string }).name).toBe('a');
    await until(() => a.open.size === 0, 3_000);
    expect(a.seen.map((s) => s.headers[':authority'])).toEqual(['svc.test.invalid:8080']);
  });
});
