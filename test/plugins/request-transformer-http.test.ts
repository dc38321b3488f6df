/**
 * request-transformer over real HTTP: undici sends, a real upstream records what it received
 * (path, query, headers, body) for every verb; jwt claims reach templates through a real HS256
 * token; values a client controls never inject a header, a path segment, a query parameter or
 * JSON structure; bodies that are not JSON or over the limit pass untouched and are counted.
 */
import { Readable } from 'node:stream';
import { SignJWT } from 'jose';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PluginInstance } from '../../dataplane/config/route-table.ts';
import type { DataPlane } from '../../dataplane/main.ts';
import { metricValue } from '../helpers/processes.ts';
import { startTestDataPlane, startUpstream, type Upstream } from '../helpers/servers.ts';
import { route, snapshot, transformer, upstream } from '../helpers/tables.ts';
import { UNSAFE_PATH_VALUES } from '../helpers/unsafe-path-values.ts';

const SECRET = 'a-shared-secret-of-32-bytes-or-more!!';
let up: Upstream;
let dp: DataPlane;

const jwt: PluginInstance = {
  id: 'plugin/test/jwt',
  name: 'jwt',
  config: {
    issuers: [
      {
        issuer: 'idp',
        audiences: ['api'],
        algorithms: ['HS256'],
        keys: [{ secretKeyRef: { name: 's', key: 'k' }, value: Buffer.from(SECRET).toString('base64') }],
      },
    ],
  },
  source: { kind: 'GatewayPlugin', namespace: 'test', name: 'jwt', generation: 1 },
};

beforeAll(async () => {
  up = await startUpstream();
  dp = await startTestDataPlane({
    maxBodyBytes: 4096,
    initialSnapshot: snapshot(
      [
        route('query', 'u', '/query', {
          plugins: [
            transformer('query', {
              remove: { query: ['debug'] },
              rename: { query: ['old:new'] },
              replace: { query: ['mode:{{ header.x-mode }}', 'absent:never'] },
              add: { query: ['src:{{ query.from }}', 'mode:ignored', 'fixed:a b&c'] },
              append: { query: ['tag:t2'] },
            }),
          ],
        }),
        route('users', 'based', '/users', {
          plugins: [
            transformer('users', {
              path: {
                pattern: '/users/{id}/orders/{order}',
                rewrite: '/v2/{{ path.order }}/of/{{ path.id }}',
              },
              add: { headers: ['X-User-Id:{{ path.id }}'] },
            }),
          ],
        }),
        route('files', 'u', '/files', {
          plugins: [
            transformer('files', {
              path: { pattern: '/files/{name}', rewrite: '/store/{{ path.name }}/{{ query.v }}' },
            }),
          ],
        }),
        route('hdr', 'u', '/hdr', {
          plugins: [
            transformer('hdr', {
              remove: { headers: ['X-Debug'] },
              rename: { headers: ['X-Old:X-New'] },
              replace: { headers: ['X-Mode:{{ header.x-old }}', 'X-Absent:never'] },
              add: {
                headers: ['X-Gateway-Version:v1', 'X-From-Query:q={{ query.q }}', 'X-Route:{{ route.id }}'],
              },
              append: { headers: ['X-List:b'] },
            }),
          ],
        }),
        route('body', 'u', '/body', {
          plugins: [
            transformer('body', {
              remove: { body: ['password', 'card.cvv'] },
              rename: { body: ['user.name:customer.fullName'] },
              replace: { body: ['status:{{ header.x-status }}'] },
              add: { body: ['meta.source:{{ query.src }}', 'meta.route:{{ route.id }}', 'status:never'] },
              maxBodyBytes: 200,
            }),
          ],
        }),
        route('claims', 'u', '/claims', {
          plugins: [
            jwt,
            transformer('claims', {
              add: {
                headers: ['X-Tenant:{{ jwt.claims.tenant }}', 'X-Consumer:{{ consumer.id }}'],
                body: ['owner:{{ jwt.claims.sub }}'],
              },
            }),
          ],
        }),
      ],
      [upstream('u', up.url), upstream('based', `${up.url}/base`)],
    ),
  });
});
afterAll(async () => {
  await dp.close();
  await up.close();
});

const last = () => up.seen[up.seen.length - 1];
const skipped = async (routeName: string, reason: string) =>
  metricValue(await dp.metrics.registry.metrics(), 'sluice_transform_skipped_total', {
    route: `route/test/${routeName}/${routeName}/0`,
    plugin: 'request-transformer',
    reason,
  });

describe('query parameters', () => {
  it('remove, rename, replace (only when present), add (only when absent), append; the rest keeps its bytes', async () => {
    const res = await request(`${dp.proxyUrl}/query?keep=%7e+x&debug=1&old=o&mode=m1&from=a%26b%3Dc&tag=t1`, {
      headers: { 'x-mode': 'fast' },
    });
    expect(res.statusCode).toBe(200);
    await res.body.dump();
    const url = last().url;
    expect(url.slice(0, url.indexOf('?'))).toBe('/query');
    const query = url.slice(url.indexOf('?') + 1);
    expect(query.startsWith('keep=%7e+x&new=o&mode=fast&from=a%26b%3Dc&tag=t1&')).toBe(true);
    const params = new URLSearchParams(query);
    expect([...params.entries()]).toEqual([
      ['keep', '~ x'],
      ['new', 'o'],
      ['mode', 'fast'],
      ['from', 'a&b=c'],
      ['tag', 't1'],
      ['src', 'a&b=c'],
      ['fixed', 'a b&c'],
      ['tag', 't2'],
    ]);
  });
});

describe('the upstream path', () => {
  it('is rewritten from the path parameters, each one encoded segment, under the base path', async () => {
    const res = await request(`${dp.proxyUrl}/users/caf%C3%A9/orders/7?x=1`);
    await res.body.dump();
    expect(res.statusCode).toBe(200);
    expect(last().url).toBe('/base/v2/7/of/caf%C3%A9?x=1');
    // A header value is Latin-1 (obs-text): "é" (U+00E9) is the one byte E9.
    expect(last().headers['x-user-id']).toBe('café');
  });

  it('a path that does not match the pattern is forwarded as it is', async () => {
    await (await request(`${dp.proxyUrl}/users/1/carts/2`)).body.dump();
    expect(last().url).toBe('/base/users/1/carts/2');
  });

  it('a value with "/", "\\" or a dot segment, in any encoding, is a 400 and nothing reaches the upstream', async () => {
    const before = up.seen.length;
    for (const v of UNSAFE_PATH_VALUES) {
      const res = await request(`${dp.proxyUrl}/files/report?v=${encodeURIComponent(v)}`);
      expect(res.statusCode, v).toBe(400);
      expect(res.headers['content-type']).toBe('application/problem+json');
      expect(await res.body.json()).toMatchObject({ code: 'SLC_ERR_BAD_PATH_VALUE' });
    }
    expect(up.seen.length).toBe(before);
    await (await request(`${dp.proxyUrl}/files/report?v=v1.2`)).body.dump();
    expect(last().url).toBe('/store/report/v1.2?v=v1.2');
  });
});

describe('headers', () => {
  it('every verb, templates reading the headers as they came; the literal X-Gateway-Version is as before', async () => {
    const headers = { 'x-debug': '1', 'x-old': 'o', 'x-mode': 'm', 'x-list': 'a' };
    await (await request(`${dp.proxyUrl}/hdr?q=hello`, { headers })).body.dump();
    expect(last().headers).toMatchObject({
      'x-new': 'o',
      'x-mode': 'o',
      'x-gateway-version': 'v1',
      'x-from-query': 'q=hello',
      'x-route': 'route/test/hdr/hdr/0',
      'x-list': 'a, b',
    });
    for (const gone of ['x-debug', 'x-old', 'x-absent']) expect(last().headers[gone]).toBeUndefined();
  });

  it('a value that would carry CR, LF or NUL refuses the request with a problem, and nothing reaches the upstream', async () => {
    for (const bad of ['%0D%0AX-Injected:%201', '%0A', '%00']) {
      const before = up.seen.length;
      const res = await request(`${dp.proxyUrl}/hdr?q=a${bad}`);
      expect(res.statusCode).toBe(400);
      expect(res.headers['content-type']).toBe('application/problem+json');
      expect(await res.body.json()).toMatchObject({
        code: 'SLC_ERR_BAD_REQUEST',
        detail: 'the x-from-query header would carry a character a header cannot hold',
      });
      expect(up.seen.length).toBe(before);
    }
  });
});

describe('JSON body fields', () => {
  const post = (body: string, type = 'application/json', extra: Record<string, string> = {}) =>
    request(`${dp.proxyUrl}/body?src=${encodeURIComponent('"},"admin":true,"x":{"')}`, {
      method: 'POST',
      headers: { 'content-type': type, 'x-status': 'checked "ok"', ...extra },
      body,
    });

  it('remove, rename, replace and add on nested paths; Content-Length follows; values stay strings', async () => {
    const res = await post(
      JSON.stringify({
        password: 'p',
        card: { cvv: 1, last4: '4242' },
        user: { name: 'Ann' },
        status: 'new',
      }),
    );
    expect(res.statusCode).toBe(200);
    await res.body.dump();
    const seen = last();
    expect(Number(seen.headers['content-length'])).toBe(Buffer.byteLength(seen.body));
    expect(JSON.parse(seen.body)).toEqual({
      card: { last4: '4242' },
      user: {},
      status: 'checked "ok"',
      customer: { fullName: 'Ann' },
      meta: { source: '"},"admin":true,"x":{"', route: 'route/test/body/body/0' },
    });
  });

  it('a chunked JSON body is transformed and sent with its length', async () => {
    const res = await request(`${dp.proxyUrl}/body`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: Readable.from([Buffer.from('{"password":'), Buffer.from('"p","a":1}')]),
    });
    await res.body.dump();
    expect(last().headers['transfer-encoding']).toBeUndefined();
    expect(JSON.parse(last().body)).toMatchObject({ a: 1, meta: { route: 'route/test/body/body/0' } });
    expect(Number(last().headers['content-length'])).toBe(Buffer.byteLength(last().body));
  });

  it('bodies that are not JSON, not valid JSON, not an object or over maxBodyBytes pass untouched and are counted', async () => {
    const cases: [string, string, string][] = [
      ['password=p', 'application/x-www-form-urlencoded', 'not_json'],
      ['{"password":', 'application/json', 'invalid_json'],
      ['[{"password":"p"}]', 'application/json', 'not_object'],
      [JSON.stringify({ password: 'p', pad: 'x'.repeat(300) }), 'application/json', 'too_large'],
    ];
    for (const [body, type, reason] of cases) {
      const before = await skipped('body', reason);
      const res = await post(body, type);
      await res.body.dump();
      expect(last().body).toBe(body);
      expect(await skipped('body', reason)).toBe(before + 1);
    }
  });

  it("a body over the gateway's limit is refused with 413, read by the transformer as the chain would", async () => {
    const before = up.seen.length;
    const res = await post(JSON.stringify({ pad: 'x'.repeat(5000) }));
    expect(res.statusCode).toBe(413);
    expect(await res.body.json()).toMatchObject({ code: 'SLC_ERR_BODY_TOO_LARGE' });
    expect(up.seen.length).toBe(before);
  });
});

describe('jwt claims and the consumer', () => {
  const token = (claims: Record<string, unknown>) =>
    new SignJWT({ iss: 'idp', aud: 'api', sub: 'u1', exp: Math.floor(Date.now() / 1000) + 60, ...claims })
      .setProtectedHeader({ alg: 'HS256' })
      .sign(new TextEncoder().encode(SECRET));

  it('reach headers and body through templates, without the transformer knowing jwt', async () => {
    const res = await request(`${dp.proxyUrl}/claims`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${await token({ tenant: 'acme' })}`,
        'content-type': 'application/json',
      },
      body: '{"owner":null}',
    });
    await res.body.dump();
    expect(res.statusCode).toBe(200);
    expect(last().headers['x-tenant']).toBe('acme');
    expect(last().headers['x-consumer']).toBe('idp#u1');
    expect(JSON.parse(last().body)).toEqual({ owner: null });
  });

  it('a claim holding CR/LF refuses the request; a claim holding JSON structure stays a string', async () => {
    const res = await request(`${dp.proxyUrl}/claims`, {
      headers: { authorization: `Bearer ${await token({ tenant: 'a\r\nx-admin: 1' })}` },
    });
    expect(res.statusCode).toBe(400);
    await res.body.dump();
    const ok = await request(`${dp.proxyUrl}/claims`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${await token({ sub: '","admin":true,"' })}`,
        'content-type': 'application/json',
      },
      body: '{}',
    });
    await ok.body.dump();
    expect(JSON.parse(last().body)).toEqual({ owner: '","admin":true,"' });
  });
});
