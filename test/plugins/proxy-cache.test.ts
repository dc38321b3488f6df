/**
 * proxy-cache in a data plane (memory store), over real HTTP (undici) against a real upstream:
 * one test per RFC 9111 rule the plugin follows, and Cache-Status / Age on every answer.
 */
import { createHash } from 'node:crypto';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PluginInstance } from '../../dataplane/config/route-table.ts';
import type { DataPlane } from '../../dataplane/main.ts';
import { type CacheUpstream, startCacheUpstream } from '../helpers/cache-upstream.ts';
import { startTestDataPlane } from '../helpers/servers.ts';
import { route, snapshot, upstream } from '../helpers/tables.ts';

const sha = (s: string) => createHash('sha256').update(s).digest('hex');
const plugin = (name: string, pluginName: string, config: Record<string, unknown>): PluginInstance =>
  ({
    id: `plugin/test/${name}`,
    name: pluginName,
    config,
    source: { kind: 'GatewayPlugin', namespace: 'test', name, generation: 1 },
  }) as PluginInstance;

const cache = (config: Record<string, unknown> = {}) => plugin('cache', 'proxy-cache', config);
const keys = plugin('keys', 'key-auth', {
  consumerHeader: 'X-Consumer',
  consumers: [
    { name: 'alice', secretKeyRef: { name: 'k', key: 'a' }, sha256: sha('alice-key') },
    { name: 'bob', secretKeyRef: { name: 'k', key: 'b' }, sha256: sha('bob-key') },
  ],
});

let up: CacheUpstream;
let dp: DataPlane;
beforeAll(async () => {
  up = await startCacheUpstream();
  dp = await startTestDataPlane({
    initialSnapshot: snapshot(
      [
        route('c', 'u', '/c', { plugins: [cache()] }),
        route('a', 'u', '/a', { plugins: [keys, cache()] }),
        route('n', 'u', '/n', { plugins: [cache({ varyHeaders: ['X-Tenant'], maxEntryBytes: 1024 })] }),
        route('p', 'u', '/p', { plugins: [cache({ methods: ['GET', 'HEAD', 'POST'] })] }),
        route('g', 'u', '/g', { plugins: [cache({ methods: ['GET'] })] }),
      ],
      [upstream('u', up.url, { responseMs: 2_000 })],
    ),
  });
});
afterAll(async () => {
  await dp.close();
  await up.close();
});

const call = async (path: string, headers: Record<string, string> = {}, method = 'GET', body?: string) => {
  const r = await request(`${dp.proxyUrl}${path}`, { method: method as 'GET', headers, body });
  const text = await r.body.text();
  return {
    status: r.statusCode,
    headers: r.headers as Record<string, string>,
    body: text,
    json: () => JSON.parse(text) as { call: number; consumer: string | null; lang: string | null },
  };
};

describe('proxy-cache: what is stored', () => {
  it('a response with max-age is stored: miss then hit with Age, the upstream called once', async () => {
    const first = await call('/c/fresh');
    expect(first.headers['cache-status']).toBe('sluice; fwd=miss; stored');
    const second = await call('/c/fresh');
    expect(second.status).toBe(200);
    expect(second.headers['cache-status']).toMatch(/^sluice; hit; ttl=(59|60)$/);
    expect(Number(second.headers.age)).toBeGreaterThanOrEqual(0);
    expect(second.body).toBe(first.body);
    expect(second.headers['x-request-id']).not.toBe(first.headers['x-request-id']);
    expect(up.calls('/fresh')).toBe(1);
  });

  it('a hit sends the stored bytes exactly: a UTF-8 body (bytes over 0x7f) with its Content-Length', async () => {
    const first = await call('/c/utf8');
    const second = await call('/c/utf8');
    expect(second.headers['cache-status']).toMatch(/^sluice; hit/);
    expect(second.body).toBe(first.body);
    expect(second.body).toContain('ünïcødé € 😀 日本');
    expect(Number(second.headers['content-length'])).toBe(Buffer.byteLength(second.body));
    expect(up.calls('/utf8')).toBe(1);
  });

  it('no-store and private responses are never stored (shared cache)', async () => {
    for (const path of ['/nostore', '/private']) {
      const a = await call(`/c${path}`);
      const b = await call(`/c${path}`);
      expect(a.headers['cache-status']).toBe('sluice; fwd=miss; detail=uncacheable');
      expect(b.headers['cache-status']).toBe('sluice; fwd=miss; detail=uncacheable');
      expect(up.calls(path)).toBe(2);
    }
  });

  it('Vary: * and Set-Cookie are never stored', async () => {
    expect((await call('/c/varystar')).headers['cache-status']).toBe('sluice; fwd=miss; detail=vary-star');
    expect((await call('/c/cookie')).headers['cache-status']).toBe('sluice; fwd=miss; detail=set-cookie');
    await call('/c/cookie');
    expect(up.calls('/cookie')).toBe(2);
  });

  it('a body over maxEntryBytes passes through whole and is not stored', async () => {
    const a = await call('/n/big');
    expect(a.body.length).toBeGreaterThan(4096);
    expect(a.headers['cache-status']).toBe('sluice; fwd=miss; detail=too-large');
    await call('/n/big');
    expect(up.calls('/big')).toBe(2);
  });

  it('the query is part of the key, in any order', async () => {
    await call('/c/fresh?a=1&b=2');
    const reordered = await call('/c/fresh?b=2&a=1');
    expect(reordered.headers['cache-status']).toMatch(/hit/);
    const other = await call('/c/fresh?a=2');
    expect(other.headers['cache-status']).toBe('sluice; fwd=miss; stored');
  });

  it('repeated parameters are a list: each order is its own entry, answered by the upstream', async () => {
    // Every spelling of one parameter name a back end may read as the same (see query-key.ts).
    for (const [x, y] of [
      ['id=1', 'id=2'],
      ['id=1', 'ID=2'],
      ['id=1', '%69d=2'],
      ['id[]=1', 'id[]=2'],
      ['a.b=1', 'a_b=2'],
    ]) {
      const first = await call(`/c/fresh?${x}&${y}`);
      const other = await call(`/c/fresh?${y}&${x}`);
      expect(other.headers['cache-status'], `${x} ${y}`).toBe('sluice; fwd=miss; stored');
      expect(JSON.parse(other.body).url).toContain(`?${y}&${x}`);
      const again = await call(`/c/fresh?${x}&${y}`);
      expect(again.headers['cache-status']).toMatch(/hit/);
      expect(again.body).toBe(first.body);
    }
  });

  it("Vary: the response's Vary header selects: another Accept-Language is not served the stored one", async () => {
    const en = await call('/c/vary', { 'accept-language': 'en' });
    expect(en.json().lang).toBe('en');
    const enAgain = await call('/c/vary', { 'accept-language': 'en' });
    expect(enAgain.headers['cache-status']).toMatch(/hit/);
    const fr = await call('/c/vary', { 'accept-language': 'fr' });
    expect(fr.headers['cache-status']).toMatch(/^sluice; fwd=vary-miss/);
    expect(fr.json().lang).toBe('fr');
  });

  it('varyHeaders: a configured request header keeps one entry per value', async () => {
    const a = await call('/n/fresh', { 'x-tenant': 'a' });
    const b = await call('/n/fresh', { 'x-tenant': 'b' });
    expect(b.headers['cache-status']).toBe('sluice; fwd=miss; stored');
    const a2 = await call('/n/fresh', { 'x-tenant': 'a' });
    const b2 = await call('/n/fresh', { 'x-tenant': 'b' });
    expect(a2.body).toBe(a.body);
    expect(b2.body).toBe(b.body);
    expect(a2.headers['cache-status']).toMatch(/hit/);
    expect(b2.headers['cache-status']).toMatch(/hit/);
  });
});

describe('proxy-cache: Authorization and consumers', () => {
  it('a request with Authorization: not stored unless the response allows it (public, s-maxage)', async () => {
    const auth = { authorization: 'Bearer t1' };
    await call('/c/fresh?auth=1', auth);
    expect((await call('/c/fresh?auth=1', auth)).headers['cache-status']).toBe(
      'sluice; fwd=miss; detail=uncacheable',
    );
    await call('/c/public?auth=1', auth);
    expect((await call('/c/public?auth=1', auth)).headers['cache-status']).toMatch(/hit/);
    await call('/c/smaxage?auth=1', auth);
    expect((await call('/c/smaxage?auth=1', auth)).headers['cache-status']).toMatch(/hit/);
  });

  it("an authenticated route never serves alice's response to bob; public responses are shared", async () => {
    const alice = await call('/a/fresh', { 'x-api-key': 'alice-key' });
    expect(alice.json().consumer).toBe('alice');
    const aliceAgain = await call('/a/fresh', { 'x-api-key': 'alice-key' });
    expect(aliceAgain.headers['cache-status']).toMatch(/hit/);
    const bob = await call('/a/fresh', { 'x-api-key': 'bob-key' });
    expect(bob.headers['cache-status']).toBe('sluice; fwd=miss; stored');
    expect(bob.json().consumer).toBe('bob');
    expect((await call('/a/fresh', { 'x-api-key': 'bob-key' })).json().consumer).toBe('bob');
    expect((await call('/a/fresh', { 'x-api-key': 'alice-key' })).json().consumer).toBe('alice');

    await call('/a/public', { 'x-api-key': 'alice-key' });
    const shared = await call('/a/public', { 'x-api-key': 'bob-key' });
    expect(shared.headers['cache-status']).toMatch(/hit/);
    expect(up.calls('/public')).toBe(1 + 1); // one here, one in the Authorization test above (/c/public)
  });

  it('an unauthenticated request to the route is refused before the cache (no cached answer)', async () => {
    const r = await call('/a/fresh');
    expect(r.status).toBe(401);
  });
});

describe('proxy-cache: revalidation and stale responses', () => {
  it('ETag: a stale entry is revalidated with If-None-Match; the 304 serves the stored body', async () => {
    const first = await call('/c/etag');
    expect(first.headers['cache-status']).toBe('sluice; fwd=miss; stored');
    const before = up.notModified();
    const second = await call('/c/etag');
    expect(second.status).toBe(200);
    expect(second.headers['cache-status']).toBe('sluice; fwd=stale; fwd-status=304; stored');
    expect(second.body).toBe(first.body);
    expect(up.notModified()).toBe(before + 1);
  });

  it('Last-Modified: revalidated with If-Modified-Since', async () => {
    const first = await call('/c/lm');
    const before = up.notModified();
    const second = await call('/c/lm');
    expect(second.headers['cache-status']).toBe('sluice; fwd=stale; fwd-status=304; stored');
    expect(second.body).toBe(first.body);
    expect(up.notModified()).toBe(before + 1);
  });

  it("a client's own If-None-Match matching the entry gets 304 from the cache", async () => {
    await call('/c/etag?inm=1');
    const r = await call('/c/etag?inm=1', { 'if-none-match': '"v1"' });
    expect(r.status).toBe(304);
    expect(r.body).toBe('');
  });

  it('a changed resource: the revalidation gets 200 and the new body is served and stored', async () => {
    await call('/c/stale');
    up.headers.set('/stale', { etag: '"s2"' });
    const changed = await call('/c/stale');
    expect(changed.headers['cache-status']).toBe('sluice; fwd=stale; fwd-status=200; stored');
    expect(changed.json().call).toBe(2);
    up.headers.delete('/stale');
  });

  it('stale-while-revalidate: the stale entry is served at once and one background request refreshes it', async () => {
    await call('/c/swr');
    const stale = await call('/c/swr');
    expect(stale.headers['cache-status']).toMatch(/^sluice; hit; ttl=-\d+; detail=stale-while-revalidate$/);
    expect(stale.json().call).toBe(1);
    await expect.poll(() => up.calls('/swr')).toBe(2);
    const refreshed = await call('/c/swr');
    expect(refreshed.json().call).toBe(2);
  });

  it('stale-if-error: the upstream answering 503 gets the stale entry; without it, the error', async () => {
    await call('/c/sie');
    up.failing.add('/sie');
    up.failing.add('/stale');
    const r = await call('/c/sie');
    expect(r.status).toBe(200);
    expect(r.headers['cache-status']).toBe('sluice; fwd=stale; fwd-status=503; detail=stale-if-error');
    expect(r.json().call).toBe(1);
    // /stale has no stale-if-error: the 503 goes through.
    const noSie = await call('/c/stale');
    expect(noSie.status).toBe(503);
    up.failing.clear();
  });
});

describe('proxy-cache: methods and coalescing', () => {
  it('HEAD is answered from the GET entry, with no body; HEAD alone stores nothing', async () => {
    await call('/c/fresh?head=1');
    const head = await call('/c/fresh?head=1', {}, 'HEAD');
    expect(head.status).toBe(200);
    expect(head.headers['cache-status']).toMatch(/hit/);
    expect(head.body).toBe('');
    const headMiss = await call('/c/fresh?head=2', {}, 'HEAD');
    expect(headMiss.headers['cache-status']).toBe('sluice; fwd=miss');
    expect((await call('/c/fresh?head=2')).headers['cache-status']).toBe('sluice; fwd=miss; stored');
  });

  it('methods without HEAD: HEAD bypasses with fwd=method; PUT always does', async () => {
    expect((await call('/g/fresh', {}, 'HEAD')).headers['cache-status']).toBe('sluice; fwd=method');
    expect((await call('/c/fresh', {}, 'PUT', 'x')).headers['cache-status']).toBe('sluice; fwd=method');
  });

  it('POST: always forwarded; stored as the GET of its URI only with explicit freshness and Content-Location', async () => {
    const post = await call('/p/post', { 'content-type': 'text/plain' }, 'POST', 'x');
    expect(post.headers['cache-status']).toBe('sluice; fwd=method; stored');
    const get = await call('/p/post');
    expect(get.headers['cache-status']).toMatch(/hit/);
    expect(get.body).toBe(post.body);
    const again = await call('/p/post', { 'content-type': 'text/plain' }, 'POST', 'y');
    expect(again.json().call).toBe(2); // a POST is never answered from the cache
    const nocl = await call('/p/post-nocl', {}, 'POST', 'x');
    expect(nocl.headers['cache-status']).toBe('sluice; fwd=method; detail=no-content-location');
    // Without POST in methods: not stored.
    await call('/c/post', {}, 'POST', 'x');
    expect((await call('/c/post')).headers['cache-status']).toBe('sluice; fwd=miss; stored');
  });

  it('a successful unsafe request invalidates the URI (RFC 9111 §4.4); a failed one does not', async () => {
    await call('/c/fresh?inv=1');
    expect((await call('/c/fresh?inv=1')).headers['cache-status']).toMatch(/hit/);
    up.failing.add('/fresh');
    expect((await call('/c/fresh?inv=1', {}, 'DELETE')).status).toBe(503);
    up.failing.clear();
    expect((await call('/c/fresh?inv=1')).headers['cache-status']).toMatch(/hit/);
    expect((await call('/c/fresh?inv=1', {}, 'PUT', 'x')).status).toBe(200);
    expect((await call('/c/fresh?inv=1')).headers['cache-status']).toBe('sluice; fwd=miss; stored');
  });

  it('100 concurrent misses for one key make one upstream call', async () => {
    const answers = await Promise.all(Array.from({ length: 100 }, () => call('/c/slow')));
    expect(up.calls('/slow')).toBe(1);
    expect(new Set(answers.map((a) => a.body)).size).toBe(1);
    expect(answers.every((a) => a.status === 200)).toBe(true);
    const statuses = answers.map((a) => a.headers['cache-status']);
    expect(statuses.filter((s) => s === 'sluice; fwd=miss; stored')).toHaveLength(1);
    expect(statuses.filter((s) => s.startsWith('sluice; hit'))).toHaveLength(99);
  });
});

describe('proxy-cache: purge through the admin API', () => {
  const purge = (prefix: string | null, token = 'test-admin-token') =>
    request(`${dp.adminUrl}/cache${prefix === null ? '' : `?prefix=${encodeURIComponent(prefix)}`}`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${token}` },
    });

  it('DELETE /cache?prefix= removes the entries under the path; others stay', async () => {
    await call('/c/fresh?purge=1');
    await call('/n/fresh?purge=1');
    const r = await purge('/c/fresh');
    expect(r.statusCode).toBe(200);
    const out = (await r.body.json()) as { purged: number };
    expect(out.purged).toBeGreaterThan(0);
    expect((await call('/c/fresh?purge=1')).headers['cache-status']).toBe('sluice; fwd=miss; stored');
    expect((await call('/n/fresh?purge=1')).headers['cache-status']).toMatch(/hit/);
  });

  it('refuses without the token (401) or without a path prefix (400), as problems', async () => {
    const noToken = await purge('/c', 'wrong');
    expect(noToken.statusCode).toBe(401);
    expect(noToken.headers['content-type']).toContain('application/problem+json');
    await noToken.body.dump();
    const bad = await purge(null);
    expect(bad.statusCode).toBe(400);
    expect(((await bad.body.json()) as { detail: string }).detail).toContain('prefix');
  });
});
