/**
 * Service versions end to end: GatewayRoutes with spec.versions, built by the controller's own
 * pipeline (build()), served by a real data plane to real upstreams on loopback, called with
 * undici. Selection by URL prefix, header, media-type parameter and default; a weighted canary
 * (10,000 requests counted at its two upstreams); sticky canaries by key-auth consumer and by
 * cookie; Deprecation / Sunset / Link on every response of a deprecated version, the gateway's
 * own answers included; 410 problem+json once the sunset has passed.
 */
import type { ServerResponse } from 'node:http';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { build } from '../../controller/build.ts';
import { parseFiles } from '../../controller/source/file.ts';
import type { DataPlane } from '../../dataplane/main.ts';
import { freePort, startTestDataPlane, startUpstream, type Upstream } from '../helpers/servers.ts';

/** An upstream that answers its own name (in the body and X-Upstream) and records what it got. */
const named = (name: string) =>
  startUpstream((_req, res: ServerResponse) => {
    res.writeHead(200, { 'x-upstream': name, 'content-length': Buffer.byteLength(name) });
    res.end(name);
    return true;
  });

const up: Record<string, Upstream> = {};
let dp: DataPlane;
const agent = new Agent({ connections: 64 });

const SECONDS = 1000;
const CONSUMERS = Array.from({ length: 24 }, (_, i) => `consumer-${i}`);

beforeAll(async () => {
  for (const n of ['v1', 'v2a', 'v2b', 'sa', 'sb', 'ca', 'cb', 'soon']) up[n] = await named(n);
  const dead = `http://127.0.0.1:${await freePort()}`;
  const yaml = `
apiVersion: sluice.dev/v1alpha1
kind: GatewayPlugin
metadata: { name: gateway-version-1 }
spec:
  plugin: request-transformer
  requestTransformer: { add: { headers: ["X-Gateway-Version:1"] } }
---
apiVersion: v1
kind: Secret
metadata: { name: keys }
stringData:
${CONSUMERS.map((c) => `  ${c}: key-of-${c}`).join('\n')}
---
apiVersion: sluice.dev/v1alpha1
kind: GatewayPlugin
metadata: { name: api-key }
spec:
  plugin: key-auth
  keyAuth:
    consumers:
${CONSUMERS.map((c) => `      - { name: ${c}, secretKeyRef: { name: keys, key: ${c} } }`).join('\n')}
---
apiVersion: sluice.dev/v1alpha1
kind: GatewayRoute
metadata: { name: items }
spec:
  service: { name: items, url: "${up.v1.url}" }
  versioning: { default: v2 }
  versions:
    - name: v1
      path: /v1
      header: "1"
      mediaType: "1"
      plugins: [{ name: gateway-version-1 }]
      deprecation:
        date: "2026-01-01T00:00:00Z"
        sunset: "2099-12-31T23:59:59Z"
        link: https://docs.example.com/items/v2
    - name: v2
      path: /v2
      header: "2"
      mediaType: "2"
      backends:
        - { url: "${up.v2a.url}", weight: 70 }
        - { url: "${up.v2b.url}", weight: 30 }
    - name: broken
      path: /broken
      url: "${dead}"
      deprecation: { date: "2026-01-01T00:00:00Z" }
    - name: retired
      path: /retired
      deprecation: { date: "2020-01-01T00:00:00Z", sunset: "2021-01-01T00:00:00Z", goneAfterSunset: true }
  routes: [{ name: items, paths: ["/items"] }]
---
apiVersion: sluice.dev/v1alpha1
kind: GatewayRoute
metadata: { name: sticky }
spec:
  service: { name: sticky, url: "${up.sa.url}" }
  plugins: [{ name: api-key }]
  versions:
    - name: by-consumer
      path: /consumer
      backends: [{ url: "${up.sa.url}", weight: 50 }, { url: "${up.sb.url}", weight: 50 }]
      sticky: { consumer: true }
  routes: [{ name: things, paths: ["/things"] }]
---
apiVersion: sluice.dev/v1alpha1
kind: GatewayRoute
metadata: { name: cookie }
spec:
  service: { name: cookie, url: "${up.ca.url}" }
  versions:
    - name: by-cookie
      path: /cookie
      backends: [{ url: "${up.ca.url}", weight: 50 }, { url: "${up.cb.url}", weight: 50 }]
      sticky: { cookie: session }
  routes: [{ name: things, paths: ["/things"] }]
`;
  dp = await serve(yaml);
});

/** A data plane serving what the controller builds from these objects (which must all be valid). */
async function serve(yaml: string): Promise<DataPlane> {
  const loaded = parseFiles([{ file: 'versions.yaml', text: yaml }]);
  const built = build(loaded.resources);
  expect([...loaded.diagnostics, ...built.diagnostics]).toEqual([]);
  return startTestDataPlane({ initialSnapshot: built.snapshot });
}

afterAll(async () => {
  await dp?.close();
  await agent.close();
  for (const u of Object.values(up)) await u.close();
});

const call = async (path: string, headers: Record<string, string> = {}) => {
  const r = await request(`${dp.proxyUrl}${path}`, { headers, dispatcher: agent });
  return { status: r.statusCode, headers: r.headers, body: await r.body.text() };
};

describe('version selection', () => {
  it('by URL prefix: /v1/items reaches v1, /v2/items the v2 backends; the prefix is forwarded', async () => {
    const v1 = await call('/v1/items/7');
    expect(v1.body).toBe('v1');
    expect(up.v1.seen.at(-1)!.url).toBe('/v1/items/7');
    expect(['v2a', 'v2b']).toContain((await call('/v2/items')).body);
  });

  it('by header: Accept-Version names the version', async () => {
    expect((await call('/items', { 'accept-version': '1' })).body).toBe('v1');
    expect(['v2a', 'v2b']).toContain((await call('/items', { 'accept-version': '2' })).body);
  });

  it('by media-type parameter: Accept: application/vnd.items+json; version=1', async () => {
    const r = await call('/items', { accept: 'text/html;q=0.1, application/vnd.items+json; version="1"' });
    expect(r.body).toBe('v1');
    expect(up.v1.seen.at(-1)!.headers.accept).toContain('version="1"');
  });

  it('a request naming no version gets the default (v2); one naming an unknown version too', async () => {
    expect(['v2a', 'v2b']).toContain((await call('/items')).body);
    expect(['v2a', 'v2b']).toContain((await call('/items', { 'accept-version': '9' })).body);
  });

  it('the URL prefix wins over a header naming another version', async () => {
    expect((await call('/v1/items', { 'accept-version': '2' })).body).toBe('v1');
  });

  it('X-Gateway-Version comes from the request-transformer at version scope', async () => {
    await call('/v1/items');
    expect(up.v1.seen.at(-1)!.headers['x-gateway-version']).toBe('1');
    await call('/v2/items');
    const last = [...up.v2a.seen, ...up.v2b.seen].at(-1)!;
    expect(last.headers['x-gateway-version']).toBeUndefined();
  });
});

describe('canary', () => {
  it('10,000 requests split 70/30 within ±2 % (counted at the two upstreams)', async () => {
    const before = { a: up.v2a.seen.length, b: up.v2b.seen.length };
    const N = 10_000;
    const BATCH = 200;
    for (let sent = 0; sent < N; sent += BATCH)
      await Promise.all(
        Array.from({ length: BATCH }, async () => {
          const r = await call('/v2/items');
          if (r.status !== 200) throw new Error(`status ${r.status}`);
        }),
      );
    const a = up.v2a.seen.length - before.a;
    const b = up.v2b.seen.length - before.b;
    expect(a + b).toBe(N);
    expect(Math.abs(b / N - 0.3)).toBeLessThanOrEqual(0.02);
  }, 60_000);

  it('sticky by consumer: each key-auth consumer always lands on the same backend', async () => {
    const sides = new Map<string, Set<string>>();
    for (let round = 0; round < 5; round++)
      for (const c of CONSUMERS) {
        const r = await call('/consumer/things', { 'x-api-key': `key-of-${c}` });
        expect(r.status).toBe(200);
        const set = sides.get(c) ?? new Set();
        set.add(r.body);
        sides.set(c, set);
      }
    for (const [, set] of sides) expect(set.size).toBe(1);
    // …and the consumers are spread over both sides (a fixed hash of fixed names).
    const onA = [...sides.values()].filter((s) => s.has('sa')).length;
    expect(onA).toBeGreaterThan(0);
    expect(onA).toBeLessThan(CONSUMERS.length);
  });

  it('sticky by consumer: authentication runs first, an unknown key never reaches either side', async () => {
    const n = up.sa.seen.length + up.sb.seen.length;
    expect((await call('/consumer/things', { 'x-api-key': 'nope' })).status).toBe(401);
    expect(up.sa.seen.length + up.sb.seen.length).toBe(n);
  });

  it('sticky by cookie: each session value always lands on the same backend; no cookie is split at random', async () => {
    const sessions = Array.from({ length: 24 }, (_, i) => `s${i}-${i * 7919}`);
    const sides = new Map<string, Set<string>>();
    for (let round = 0; round < 5; round++)
      for (const s of sessions) {
        const r = await call('/cookie/things', { cookie: `theme=dark; session=${s}` });
        const set = sides.get(s) ?? new Set();
        set.add(r.body);
        sides.set(s, set);
      }
    for (const [, set] of sides) expect(set.size).toBe(1);
    const onA = [...sides.values()].filter((s) => s.has('ca')).length;
    expect(onA).toBeGreaterThan(0);
    expect(onA).toBeLessThan(sessions.length);
    const anonymous = new Set<string>();
    for (let i = 0; i < 40; i++) anonymous.add((await call('/cookie/things')).body);
    expect(anonymous).toEqual(new Set(['ca', 'cb']));
  });
});

describe('deprecation', () => {
  it('a deprecated version answers with Deprecation (RFC 9745), Sunset (RFC 8594) and Link', async () => {
    const r = await call('/v1/items');
    expect(r.status).toBe(200);
    expect(r.headers.deprecation).toBe(`@${Date.parse('2026-01-01T00:00:00Z') / 1000}`);
    expect(r.headers.sunset).toBe('Thu, 31 Dec 2099 23:59:59 GMT');
    expect(r.headers.link).toBe(
      '<https://docs.example.com/items/v2>; rel="deprecation", <https://docs.example.com/items/v2>; rel="sunset"',
    );
    // Selected by header, the same version carries the same headers; v2 carries none.
    expect((await call('/items', { 'accept-version': '1' })).headers.deprecation).toBeDefined();
    const v2 = await call('/v2/items');
    expect(v2.headers.deprecation).toBeUndefined();
    expect(v2.headers.sunset).toBeUndefined();
    expect(v2.headers.link).toBeUndefined();
  });

  it("the gateway's own answers carry them too (a 502 problem from an unreachable backend)", async () => {
    const r = await call('/broken/items');
    expect(r.status).toBe(502);
    expect(r.headers['content-type']).toBe('application/problem+json');
    expect(r.headers.deprecation).toBe(`@${Date.parse('2026-01-01T00:00:00Z') / 1000}`);
  });

  it('after the sunset, goneAfterSunset answers 410 problem+json and reaches no upstream', async () => {
    const n = up.v1.seen.length;
    const r = await call('/retired/items');
    expect(r.status).toBe(410);
    expect(r.headers['content-type']).toBe('application/problem+json');
    expect(r.headers.sunset).toBe('Fri, 01 Jan 2021 00:00:00 GMT');
    expect(JSON.parse(r.body)).toMatchObject({ status: 410, code: 'SLC_ERR_VERSION_GONE' });
    expect(up.v1.seen.length).toBe(n);
  });

  it('the sunset is read against the clock per request: served before it, 410 from it on', async () => {
    // Whole seconds (the headers carry seconds), a little ahead: the version turns 410 during the test.
    const goneAtMs = (Math.floor(Date.now() / SECONDS) + 2) * SECONDS;
    const soon = await serve(`
apiVersion: sluice.dev/v1alpha1
kind: GatewayRoute
metadata: { name: soon }
spec:
  service: { name: soon, url: "${up.soon.url}" }
  versions:
    - name: v1
      path: /v1
      deprecation:
        date: "2020-01-01T00:00:00Z"
        sunset: "${new Date(goneAtMs).toISOString()}"
        goneAfterSunset: true
  routes: [{ name: r, paths: ["/soon"] }]
`);
    try {
      const get = async () => {
        const r = await request(`${soon.proxyUrl}/v1/soon`, { dispatcher: agent });
        await r.body.dump();
        return r.statusCode;
      };
      expect(Date.now()).toBeLessThan(goneAtMs);
      expect(await get()).toBe(200);
      await new Promise((r) => setTimeout(r, goneAtMs - Date.now() + 50));
      const n = up.soon.seen.length;
      expect(await get()).toBe(410);
      expect(up.soon.seen.length).toBe(n);
    } finally {
      await soon.close();
    }
  });
});
