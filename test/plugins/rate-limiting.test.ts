/**
 * rate-limiting end to end in one data plane, on both policies (local; redis on the machine's
 * Redis with a unique prefix, exact and with syncMs): exact counts, 429 problem with Retry-After, RateLimit headers,
 * who is counted (header, IP), service scope, two windows at once, and two plugins on one route. The windows are long
 * (hour, day) so that no test straddles a boundary.
 */
import { randomUUID } from 'node:crypto';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DataPlane } from '../../dataplane/main.ts';
import { dropPrefix, sharedRedisUrl, uniquePrefix } from '../helpers/redis.ts';
import { startTestDataPlane, startUpstream, type Upstream } from '../helpers/servers.ts';
import { rateLimitPlugin, route, snapshot, upstream } from '../helpers/tables.ts';

let up: Upstream;
beforeAll(async () => {
  up = await startUpstream();
});
afterAll(() => up.close());

// redis+syncMs: counted here and synced with Redis every 20 ms; one replica decides as exactly as
// the others (its share between syncs is all the room: --replicas-hint 1).
describe.each(['local', 'redis', 'redis+syncMs'] as const)('rate-limiting, policy %s', (mode) => {
  const policy = mode === 'local' ? 'local' : 'redis';
  const sync = mode === 'redis+syncMs' ? { syncMs: 20 } : {};
  let dp: DataPlane;
  const prefix = uniquePrefix('rl');
  beforeAll(async () => {
    const rl = (name: string, config: Record<string, unknown>) =>
      rateLimitPlugin(name, { policy, ...sync, ...config });
    const service = rl('svc', { hour: 3, limitBy: 'header', header: 'X-Client', scope: 'service' });
    dp = await startTestDataPlane({
      ...(policy === 'redis' ? { redisUrl: sharedRedisUrl, redisPrefix: prefix } : {}),
      initialSnapshot: snapshot(
        [
          route('byheader', 'u', '/h', {
            plugins: [rl('h', { hour: 5, limitBy: 'header', header: 'X-Client' })],
          }),
          route('byip', 'u', '/ip', { plugins: [rl('ip', { day: 2, limitBy: 'ip' })] }),
          route('two', 'u', '/two', {
            plugins: [rl('two', { hour: 4, day: 6, limitBy: 'header', header: 'X-Client' })],
          }),
          route('hidden', 'u', '/hidden', {
            plugins: [rl('hid', { hour: 1, limitBy: 'header', header: 'X-Client', hideHeaders: true })],
          }),
          // Two plugins with the same limitBy and window on one route: each keeps its own count.
          route('pair', 'u', '/pair', {
            plugins: [
              rl('pair-a', { hour: 3, limitBy: 'header', header: 'X-Client' }),
              rl('pair-b', { hour: 3, limitBy: 'header', header: 'X-Client' }),
            ],
          }),
          // Two routes of one GatewayRoute ("shop"): a service-scope limit is one count for both.
          { ...route('shop', 'u', '/shop/a', { plugins: [service] }), id: 'route/test/shop/a/0' },
          { ...route('shop', 'u', '/shop/b', { plugins: [service] }), id: 'route/test/shop/b/0' },
        ],
        [upstream('u', up.url)],
      ),
    });
  });
  afterAll(async () => {
    await dp.close();
    if (policy === 'redis') await dropPrefix(sharedRedisUrl, prefix);
  });

  const get = async (path: string, client?: string) => {
    const r = await request(`${dp.proxyUrl}${path}`, { headers: client ? { 'x-client': client } : {} });
    const body = await r.body.text();
    return { status: r.statusCode, headers: r.headers, body };
  };

  it('admits exactly the limit, then 429 problem+json with Retry-After and RateLimit headers', async () => {
    const client = randomUUID();
    const answers = [];
    for (let i = 0; i < 7; i++) answers.push(await get('/h', client));
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 200, 429, 429]);
    expect(answers[0].headers['ratelimit-policy']).toBe('"hour";q=5;w=3600');
    expect(answers[0].headers.ratelimit).toMatch(/^"hour";r=4;t=\d+$/);
    expect(answers[4].headers.ratelimit).toMatch(/^"hour";r=0;t=\d+$/);
    const limited = answers[5];
    expect(limited.headers['content-type']).toBe('application/problem+json');
    expect(JSON.parse(limited.body).code).toBe('SLC_ERR_RATE_LIMITED');
    const retry = Number(limited.headers['retry-after']);
    expect(retry).toBeGreaterThan(0);
    expect(retry).toBeLessThanOrEqual(3600);
    expect(limited.headers.ratelimit).toBe(`"hour";r=0;t=${retry}`);
  });

  it('concurrent requests are admitted exactly up to the limit', async () => {
    const client = randomUUID();
    const all = await Promise.all(Array.from({ length: 40 }, () => get('/h', client)));
    expect(all.filter((a) => a.status === 200)).toHaveLength(5);
    expect(all.filter((a) => a.status === 429)).toHaveLength(35);
  });

  it('different callers are counted apart; the header is the caller here', async () => {
    const [a, b] = [randomUUID(), randomUUID()];
    for (let i = 0; i < 5; i++) expect((await get('/h', a)).status).toBe(200);
    expect((await get('/h', a)).status).toBe(429);
    expect((await get('/h', b)).status).toBe(200);
  });

  it('limitBy ip counts the client address', async () => {
    // One client address for the whole suite run on this route: 2 per day.
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await get('/ip', randomUUID())).status);
    expect(statuses).toEqual([200, 200, 429]);
  });

  it('two windows: the tighter one decides, and a refused request counts in neither', async () => {
    const client = randomUUID();
    const statuses = [];
    for (let i = 0; i < 5; i++) statuses.push((await get('/two', client)).status);
    expect(statuses).toEqual([200, 200, 200, 200, 429]);
    const last = await get('/two', client);
    expect(last.headers['ratelimit-policy']).toBe('"hour";q=4;w=3600, "day";q=6;w=86400');
    expect(last.headers.ratelimit).toMatch(/^"hour";r=0;t=\d+$/);
  });

  it('two plugins with the same limitBy and window: each counts a request once, in its own count', async () => {
    const client = randomUUID();
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await get('/pair', client)).status);
    expect(statuses).toEqual([200, 200, 200, 429]);
  });

  it('scope service: one count across the routes of the GatewayRoute', async () => {
    const client = randomUUID();
    const statuses = [
      (await get('/shop/a', client)).status,
      (await get('/shop/b', client)).status,
      (await get('/shop/a', client)).status,
      (await get('/shop/b', client)).status,
    ];
    expect(statuses).toEqual([200, 200, 200, 429]);
  });

  it('hideHeaders sends no RateLimit headers, even on 429', async () => {
    const client = randomUUID();
    const ok = await get('/hidden', client);
    const limited = await get('/hidden', client);
    expect([ok.status, limited.status]).toEqual([200, 429]);
    for (const a of [ok, limited]) {
      expect(a.headers.ratelimit).toBeUndefined();
      expect(a.headers['ratelimit-policy']).toBeUndefined();
    }
    expect(limited.headers['retry-after']).toBeDefined();
  });

  it('counts decisions per route in the metrics', async () => {
    const text = await (await request(`${dp.adminUrl}/metrics`)).body.text();
    expect(text).toMatch(
      /sluice_rate_limit_requests_total\{route="route\/test\/byheader\/byheader\/0",result="limited"\} [1-9]/,
    );
    expect(text).toMatch(
      /sluice_rate_limit_requests_total\{route="route\/test\/byheader\/byheader\/0",result="allowed"\} [1-9]/,
    );
  });
});
