/**
 * oidc in a data plane against a real OpenID provider (oidc-provider on loopback, issuing real
 * tokens): discovery from the issuer alone, JWT access tokens verified locally, opaque ones
 * introspected (cached, coalesced), scopes (403 insufficient_scope), a wrong audience and
 * another issuer refused, the provider down (known keys keep working, introspection fails
 * closed), key rotation, and the consumer the rate limit and idempotency records are scoped to.
 */
import { randomUUID } from 'node:crypto';
import { decodeJwt, type JWK } from 'jose';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DataPlane } from '../../dataplane/main.ts';
import { Discovery } from '../../dataplane/plugins/oidc/discovery.ts';
import {
  GATEWAY_CLIENT,
  type OidcProvider,
  OTHER_CLIENT,
  signingKey,
  startOidcProvider,
} from '../helpers/oidc-provider.ts';
import { capturedLog, startTestDataPlane, startUpstream, type Upstream } from '../helpers/servers.ts';
import { idempotencyPlugin, rateLimitPlugin, route, snapshot, upstream } from '../helpers/tables.ts';

const JWT_RESOURCE = 'https://orders.jwt.test/';
const OPAQUE_RESOURCE = 'urn:orders:opaque';
let op: OidcProvider;
let otherOp: OidcProvider;
let up: Upstream;
let dp: DataPlane;
let k1: JWK;
const captured = capturedLog();

const oidc = (name: string, extra: Record<string, unknown> = {}) => ({
  id: `plugin/test/${name}`,
  name: 'oidc' as const,
  config: {
    issuer: op.issuer,
    audiences: [JWT_RESOURCE, OPAQUE_RESOURCE],
    algorithms: ['RS256'],
    introspection: {
      clientId: GATEWAY_CLIENT.id,
      clientSecret: {
        secretKeyRef: { name: 'gw', key: 'secret' },
        value: Buffer.from(GATEWAY_CLIENT.secret).toString('base64'),
      },
    },
    claimsToHeaders: [{ claim: 'client_id', header: 'X-Client' }],
    ...extra,
  },
  source: { kind: 'GatewayPlugin', namespace: 'test', name, generation: 1 },
});

beforeAll(async () => {
  k1 = await signingKey('k1');
  op = await startOidcProvider([k1]);
  otherOp = await startOidcProvider([await signingKey('other')]);
  up = await startUpstream();
  dp = await startTestDataPlane({
    accessLog: true,
    log: captured.log,
    initialSnapshot: snapshot(
      [
        route('o', 'u', '/o', { plugins: [oidc('o'), idempotencyPlugin('idem')] }),
        route('w', 'u', '/w', { plugins: [oidc('w', { scopes: ['orders:write'] })] }),
        route('rl', 'u', '/rl', {
          plugins: [oidc('rl'), rateLimitPlugin('two', { minute: 2, policy: 'local' })],
        }),
        route('short', 'u', '/short', {
          plugins: [oidc('short', { introspection: { ...oidc('x').config.introspection, cacheTtl: '1s' } })],
        }),
        route('two', 'u', '/two', {
          plugins: [oidc('two', { introspection: { ...oidc('x').config.introspection, cacheEntries: 2 } })],
        }),
        route('closed401', 'u', '/closed401', {
          plugins: [
            oidc('c401', { introspection: { ...oidc('x').config.introspection, onError: 'unauthorized' } }),
          ],
        }),
      ],
      [upstream('u', up.url)],
    ),
  });
});
afterAll(async () => {
  await dp.close();
  await up.close();
  await op.stop();
  await otherOp.stop();
});

const call = async (path: string, token?: string, extra: Record<string, string> = {}, method = 'GET') => {
  const r = await request(`${dp.proxyUrl}${path}`, {
    method: method as 'GET',
    headers: { ...(token === undefined ? {} : { authorization: `Bearer ${token}` }), ...extra },
    body: method === 'POST' ? '{"a":1}' : undefined,
  });
  const body = await r.body.text();
  return {
    status: r.statusCode,
    headers: r.headers,
    body,
    code: r.statusCode >= 400 ? (JSON.parse(body) as { code: string }).code : undefined,
  };
};

describe('oidc', () => {
  it('a JWT access token of the provider passes, verified locally (no introspection); the client goes upstream', async () => {
    const token = await op.token(JWT_RESOURCE);
    expect(token.split('.')).toHaveLength(3);
    const before = op.introspections();
    const r = await call('/o', token, { 'x-client': 'forged' });
    expect(r.status).toBe(200);
    expect(up.seen.at(-1)!.headers['x-client']).toBe('app');
    expect(op.introspections()).toBe(before);
  });

  it('an opaque token is introspected once, then served from the cache', async () => {
    const token = await op.token(OPAQUE_RESOURCE);
    expect(token.split('.')).toHaveLength(1);
    const before = op.introspections();
    for (let i = 0; i < 3; i++) expect((await call('/o', token)).status).toBe(200);
    expect(up.seen.at(-1)!.headers['x-client']).toBe('app');
    expect(op.introspections() - before).toBe(1);
  });

  it('concurrent requests with one new opaque token share one introspection', async () => {
    const token = await op.token(OPAQUE_RESOURCE);
    const before = op.introspections();
    const all = await Promise.all(Array.from({ length: 12 }, () => call('/o', token)));
    expect(all.map((r) => r.status)).toEqual(Array(12).fill(200));
    expect(op.introspections() - before).toBe(1);
  });

  it.each([
    ['JWT', JWT_RESOURCE],
    ['opaque', OPAQUE_RESOURCE],
  ])('scopes (%s): without orders:write 403 insufficient_scope, with it 200', async (_kind, resource) => {
    const read = await call('/w', await op.token(resource, 'orders:read'));
    expect([read.status, read.code]).toEqual([403, 'SLC_ERR_INSUFFICIENT_SCOPE']);
    expect(read.headers['www-authenticate']).toBe(
      'Bearer realm="sluice", error="insufficient_scope", scope="orders:write"',
    );
    expect((await call('/w', await op.token(resource, 'orders:read orders:write'))).status).toBe(200);
  });

  it('an introspected token is kept at most cacheTtl: revoked at the provider, it stops working after it', async () => {
    const token = await op.token(OPAQUE_RESOURCE);
    expect((await call('/short', token)).status).toBe(200);
    await op.revoke(token);
    expect((await call('/short', token)).status).toBe(200); // still cached
    await new Promise((r) => setTimeout(r, 1_100));
    const r = await call('/short', token);
    expect([r.status, r.code]).toEqual([401, 'SLC_ERR_CREDENTIALS_INVALID']);
  });

  it('the introspection cache holds at most cacheEntries: the oldest answer is asked for again', async () => {
    const [a, b, c] = await Promise.all([1, 2, 3].map(() => op.token(OPAQUE_RESOURCE)));
    const before = op.introspections();
    for (const t of [a, b, a, b]) expect((await call('/two', t)).status).toBe(200);
    expect(op.introspections() - before).toBe(2);
    expect((await call('/two', c)).status).toBe(200); // evicts a
    expect((await call('/two', b)).status).toBe(200);
    expect(op.introspections() - before).toBe(3);
    expect((await call('/two', a)).status).toBe(200);
    expect(op.introspections() - before).toBe(4);
  });

  it('a JWT for another audience is refused with 401', async () => {
    const token = await op.token('https://billing.jwt.test/');
    expect(decodeJwt(token).aud).toBe('https://billing.jwt.test/');
    const r = await call('/o', token);
    expect([r.status, r.code]).toEqual([401, 'SLC_ERR_CREDENTIALS_INVALID']);
    expect(JSON.parse(r.body).detail).toContain('"aud"');
  });

  it('an opaque token for another audience is refused with 401', async () => {
    const r = await call('/o', await op.token('urn:billing:opaque'));
    expect([r.status, r.code]).toEqual([401, 'SLC_ERR_CREDENTIALS_INVALID']);
  });

  it("another provider's tokens are refused with 401 (JWT by its iss; opaque: this provider does not know it)", async () => {
    for (const resource of [JWT_RESOURCE, OPAQUE_RESOURCE]) {
      const r = await call('/o', await otherOp.token(resource));
      expect([r.status, r.code]).toEqual([401, 'SLC_ERR_CREDENTIALS_INVALID']);
    }
  });

  it('no token, a token that is not "Bearer", an unknown opaque token: 401 with the Bearer challenge', async () => {
    const none = await call('/o');
    expect([none.status, none.code]).toEqual([401, 'SLC_ERR_CREDENTIALS_MISSING']);
    expect(none.headers['www-authenticate']).toMatch(/^Bearer realm="sluice"/);
    const basic = await call('/o', undefined, { authorization: 'Basic YTpi' });
    expect(basic.status).toBe(401);
    const unknown = await call('/o', 'not-a-token-the-provider-issued');
    expect([unknown.status, unknown.code]).toEqual([401, 'SLC_ERR_CREDENTIALS_INVALID']);
    expect(JSON.parse(unknown.body).detail).toBe('the token is not active');
  });

  it('the consumer is the rate limit key: JWT and opaque tokens of one client share its bucket, another client has its own', async () => {
    const jwt = await op.token(JWT_RESOURCE);
    const opaque = await op.token(OPAQUE_RESOURCE);
    expect((await call('/rl', jwt)).status).toBe(200);
    expect((await call('/rl', opaque)).status).toBe(200);
    const third = await call('/rl', jwt);
    expect([third.status, third.code]).toEqual([429, 'SLC_ERR_RATE_LIMITED']);
    expect((await call('/rl', await op.token(JWT_RESOURCE, undefined, OTHER_CLIENT))).status).toBe(200);
  });

  it('idempotency records belong to the consumer: the client replays, another client with the same key does not (nor 422)', async () => {
    const key = `k-${randomUUID()}`;
    const h = { 'idempotency-key': key, 'content-type': 'application/json' };
    const token = await op.token(OPAQUE_RESOURCE);
    const first = await call('/o', token, h, 'POST');
    const again = await call('/o', token, h, 'POST');
    const other = await call('/o', await op.token(JWT_RESOURCE, undefined, OTHER_CLIENT), h, 'POST');
    expect([first.status, again.status, other.status]).toEqual([200, 200, 200]);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(other.headers['idempotent-replayed']).toBeUndefined();
  });

  it('the access log names the consumer, never the token', async () => {
    const token = await op.token(OPAQUE_RESOURCE);
    await call('/o', token);
    await new Promise((r) => setTimeout(r, 100));
    const text = captured.text();
    expect(text).toContain(`"consumer":"${op.issuer}#app"`);
    expect(text).not.toContain(token);
  });

  it('provider down: a JWT with known keys still passes; a new opaque token fails closed (503, or 401 by config)', async () => {
    const jwt = await op.token(JWT_RESOURCE);
    const opaque = await op.token(OPAQUE_RESOURCE);
    const cached = await op.token(OPAQUE_RESOURCE);
    expect((await call('/o', cached)).status).toBe(200);
    await op.stop();
    try {
      expect((await call('/o', jwt)).status).toBe(200);
      expect((await call('/o', cached)).status).toBe(200);
      const r = await call('/o', opaque);
      expect([r.status, r.code]).toEqual([503, 'SLC_ERR_AUTH_UNAVAILABLE']);
      const closed = await call('/closed401', opaque);
      expect([closed.status, closed.code]).toEqual([401, 'SLC_ERR_CREDENTIALS_INVALID']);
    } finally {
      await op.start();
    }
  });

  it('key rotation: tokens signed with a new key pass once the JWKS is read again for its kid', async () => {
    await op.stop();
    await op.start([await signingKey('k2')]);
    const token = await op.token(JWT_RESOURCE);
    expect((await import('jose')).decodeProtectedHeader(token).kid).toBe('k2');
    expect((await call('/o', token)).status).toBe(200);
  });
});

describe('oidc discovery', () => {
  it('reads the metadata from the issuer, keeps the last good one while the provider is down', async () => {
    const p = await startOidcProvider([k1]);
    const d = new Discovery(p.issuer, { refreshMs: 0, cooldownMs: 0 });
    const first = await d.ready();
    expect(first?.metadata).toEqual({
      issuer: p.issuer,
      jwksUri: `${p.issuer}/jwks`,
      introspectionEndpoint: `${p.issuer}/token/introspection`,
      authorizationEndpoint: `${p.issuer}/auth`,
      tokenEndpoint: `${p.issuer}/token`,
      endSessionEndpoint: `${p.issuer}/session/end`,
    });
    await p.stop();
    expect(d.current()?.metadata).toEqual(first?.metadata); // a refresh starts and fails
    expect((await d.ready())?.metadata).toEqual(first?.metadata);
  });

  it('refuses a document that names another issuer', async () => {
    const errors: string[] = [];
    const d = new Discovery(`${otherOp.issuer}/`, {
      refreshMs: 60_000,
      onFetch: (ok, e) => ok || errors.push(e!),
    });
    expect(await d.ready()).toBeNull();
    expect(errors[0]).toContain('another issuer');
  });
});
