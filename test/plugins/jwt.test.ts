/**
 * jwt in a data plane, against tokens made with jose and a JWKS served on loopback: the
 * attacks a JWT verifier must refuse (alg none, HS/RS confusion, an algorithm outside the
 * allow-list, expired or not yet valid beyond the skew, wrong issuer or audience, malformed or
 * oversized tokens: always 401, never 500), key rotation (one JWKS fetch for an unknown kid,
 * then a cooldown), and an identity provider outage (known keys keep working).
 */
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, exportSPKI, type GenerateKeyPairResult, generateKeyPair, type JWK, SignJWT } from 'jose';
import { Client, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DataPlane } from '../../dataplane/main.ts';
import { startTestDataPlane, startUpstream, type Upstream } from '../helpers/servers.ts';
import { route, snapshot, upstream } from '../helpers/tables.ts';

const ISS = 'https://idp.test/';
const HS_SECRET = 'a-shared-secret-of-32-bytes-or-more!!';
let up: Upstream;
let dp: DataPlane;
let jwksServer: Server;
let pairServer: Server;
let jwks: { keys: JWK[] } = { keys: [] };
let jwksDown = false;
let fetches = 0;
const keys: Record<string, GenerateKeyPairResult> = {};
let rsPem = '';

const plugin = (name: string, config: Record<string, unknown>) => ({
  id: `plugin/test/${name}`,
  name: 'jwt' as const,
  config,
  source: { kind: 'GatewayPlugin', namespace: 'test', name, generation: 1 },
});
const b64 = (s: string) => Buffer.from(s).toString('base64');
const b64url = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');
const now = () => Math.floor(Date.now() / 1000);

beforeAll(async () => {
  for (const kid of ['rs1', 'rs2', 'rs3'])
    keys[kid] = (await generateKeyPair('RS256', { extractable: true })) as GenerateKeyPairResult;
  keys.es1 = (await generateKeyPair('ES256', { extractable: true })) as GenerateKeyPairResult;
  rsPem = await exportSPKI(keys.rs1.publicKey);
  // The JWKS also publishes an EC key: only the issuer's allow-list (RS256) can refuse ES256 tokens.
  jwks = {
    keys: [
      { ...(await exportJWK(keys.rs1.publicKey)), kid: 'rs1', alg: 'RS256', use: 'sig' },
      { ...(await exportJWK(keys.es1.publicKey)), kid: 'es1', alg: 'ES256', use: 'sig' },
    ],
  };
  jwksServer = createServer((_req, res) => {
    fetches++;
    if (jwksDown) {
      res.writeHead(503).end();
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(jwks));
  });
  jwksServer.listen(0, '127.0.0.1');
  await once(jwksServer, 'listening');
  const jwksUri = `http://127.0.0.1:${(jwksServer.address() as AddressInfo).port}/jwks`;
  // A second JWKS with two RS256 keys, never rotated: a token without kid matches both.
  const pair = {
    keys: [
      { ...(await exportJWK(keys.rs2.publicKey)), kid: 'pair-2', alg: 'RS256', use: 'sig' },
      { ...(await exportJWK(keys.rs3.publicKey)), kid: 'pair-3', alg: 'RS256', use: 'sig' },
    ],
  };
  pairServer = createServer((_req, res) =>
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(pair)),
  );
  pairServer.listen(0, '127.0.7.1');
  await once(pairServer, 'listening');
  const pairUri = `http://127.0.7.1:${(pairServer.address() as AddressInfo).port}/jwks`;
  up = await startUpstream();
  dp = await startTestDataPlane({
    initialSnapshot: snapshot(
      [
        route('rs', 'u', '/rs', {
          plugins: [
            plugin('rs', {
              issuers: [{ issuer: ISS, audiences: ['orders'], algorithms: ['RS256'], jwksUri }],
              claimsToHeaders: [{ claim: 'sub', header: 'X-User' }],
            }),
          ],
        }),
        route('rs0', 'u', '/rs0', {
          plugins: [
            plugin('rs0', {
              issuers: [{ issuer: ISS, audiences: ['orders'], algorithms: ['RS256'], jwksUri }],
              clockSkew: '0s',
            }),
          ],
        }),
        route('hs', 'u', '/hs', {
          plugins: [
            plugin('hs', {
              issuers: [
                {
                  issuer: 'hs-issuer',
                  audiences: ['orders'],
                  algorithms: ['HS256'],
                  keys: [{ secretKeyRef: { name: 's', key: 'k' }, value: b64(HS_SECRET) }],
                },
              ],
            }),
          ],
        }),
        route('pair', 'u', '/pair', {
          plugins: [
            plugin('pair', {
              issuers: [
                { issuer: 'pair-issuer', audiences: ['orders'], algorithms: ['RS256'], jwksUri: pairUri },
              ],
            }),
          ],
        }),
        // Several static keys (two PEM, one HMAC secret), no JWKS: a token naming no kid is
        // tried against each key of its algorithm.
        route('multi', 'u', '/multi', {
          plugins: [
            plugin('multi', {
              issuers: [
                {
                  issuer: 'multi-issuer',
                  audiences: ['orders'],
                  algorithms: ['RS256', 'HS256'],
                  keys: [
                    {
                      secretKeyRef: { name: 's', key: 'rs2' },
                      value: b64(await exportSPKI(keys.rs2.publicKey)),
                    },
                    {
                      kid: 'k3',
                      secretKeyRef: { name: 's', key: 'rs3' },
                      value: b64(await exportSPKI(keys.rs3.publicKey)),
                    },
                    { secretKeyRef: { name: 's', key: 'k' }, value: b64(HS_SECRET) },
                  ],
                },
              ],
            }),
          ],
        }),
        // A PEM public key for RS256: an HS256 token "signed" with that PEM text must not pass.
        route('pem', 'u', '/pem', {
          plugins: [
            plugin('pem', {
              issuers: [
                {
                  issuer: 'pem-issuer',
                  audiences: ['orders'],
                  algorithms: ['RS256'],
                  keys: [{ secretKeyRef: { name: 's', key: 'pem' }, value: b64(rsPem) }],
                },
              ],
            }),
          ],
        }),
      ],
      [upstream('u', up.url)],
    ),
  });
  // The JWKS is fetched when the plugin is built; let it land.
  for (let i = 0; i < 100 && fetches === 0; i++) await new Promise((r) => setTimeout(r, 10));
});
afterAll(async () => {
  await dp.close();
  await up.close();
  jwksServer.close();
  pairServer.close();
});

async function sign(
  kid: string,
  claims: Record<string, unknown> = {},
  opts: { alg?: string; iss?: string; aud?: string; exp?: number | null; nbf?: number; key?: unknown } = {},
): Promise<string> {
  const alg = opts.alg ?? (kid.startsWith('es') ? 'ES256' : 'RS256');
  const payload: Record<string, unknown> = {
    sub: 'user-42',
    ...claims,
    iss: opts.iss ?? ISS,
    aud: opts.aud ?? 'orders',
  };
  if (opts.exp !== null) payload.exp = opts.exp ?? now() + 300;
  if (opts.nbf !== undefined) payload.nbf = opts.nbf;
  return new SignJWT(payload)
    .setProtectedHeader({ alg, kid })
    .sign((opts.key ?? keys[kid]?.privateKey) as Parameters<SignJWT['sign']>[0]);
}

const call = async (path: string, token?: string, headers: Record<string, string> = {}) => {
  const r = await request(`${dp.proxyUrl}${path}`, {
    headers: { ...(token === undefined ? {} : { authorization: `Bearer ${token}` }), ...headers },
  });
  const body = await r.body.text();
  return {
    status: r.statusCode,
    headers: r.headers,
    body,
    code: r.statusCode >= 400 ? JSON.parse(body).code : undefined,
  };
};

describe('jwt', () => {
  it('a valid RS256 token passes; the subject goes upstream in X-User and a client copy is replaced', async () => {
    const r = await call('/rs', await sign('rs1'), { 'x-user': 'admin' });
    expect(r.status).toBe(200);
    expect(up.seen.at(-1)!.headers['x-user']).toBe('user-42');
  });

  it('no token: 401 with WWW-Authenticate', async () => {
    const r = await call('/rs');
    expect([r.status, r.code]).toEqual([401, 'SLC_ERR_CREDENTIALS_MISSING']);
    expect(r.headers['www-authenticate']).toMatch(/^Bearer realm="sluice"/);
  });

  it.each([
    [
      'alg none',
      async () =>
        `${b64url({ alg: 'none' })}.${b64url({ iss: ISS, aud: 'orders', sub: 'x', exp: now() + 60 })}.`,
    ],
    ['an algorithm outside the allow-list (ES256 on an RS256 issuer)', () => sign('es1')],
    [
      'a token signed by an unknown key under a known kid',
      () => sign('rs1', {}, { key: keys.rs2.privateKey }),
    ],
    ['expired beyond the clock skew', () => sign('rs1', {}, { exp: now() - 120 })],
    ['not valid before, beyond the skew', () => sign('rs1', {}, { nbf: now() + 120 })],
    ['without exp', () => sign('rs1', {}, { exp: null })],
    ['a wrong issuer', () => sign('rs1', {}, { iss: 'https://evil.test/' })],
    ['a wrong audience', () => sign('rs1', {}, { aud: 'billing' })],
  ])('refuses %s with 401', async (_what, make) => {
    const r = await call('/rs', await make());
    expect([r.status, r.code]).toEqual([401, 'SLC_ERR_CREDENTIALS_INVALID']);
    expect(r.body).not.toContain('BEGIN');
  });

  it('accepts exp and nbf within the clock skew', async () => {
    expect((await call('/rs', await sign('rs1', {}, { exp: now() - 10 }))).status).toBe(200);
    expect((await call('/rs', await sign('rs1', {}, { nbf: now() + 10 }))).status).toBe(200);
  });

  it('HS/RS confusion: an HS256 token keyed with the RS256 public key PEM is refused', async () => {
    const forged = await new SignJWT({ iss: 'pem-issuer', aud: 'orders', sub: 'x', exp: now() + 60 })
      .setProtectedHeader({ alg: 'HS256' })
      .sign(new TextEncoder().encode(rsPem));
    expect((await call('/pem', forged)).status).toBe(401);
    // The same issuer's real RS256 tokens pass.
    expect((await call('/pem', await sign('rs1', {}, { iss: 'pem-issuer' }))).status).toBe(200);
  });

  it('a static HMAC key from a Secret verifies HS256; another secret does not', async () => {
    const secret = (s: string) => new TextEncoder().encode(s);
    const ok = await new SignJWT({ iss: 'hs-issuer', aud: 'orders', sub: 'svc', exp: now() + 60 })
      .setProtectedHeader({ alg: 'HS256' })
      .sign(secret(HS_SECRET));
    const bad = await new SignJWT({ iss: 'hs-issuer', aud: 'orders', sub: 'svc', exp: now() + 60 })
      .setProtectedHeader({ alg: 'HS256' })
      .sign(secret(`${HS_SECRET}x`));
    expect((await call('/hs', ok)).status).toBe(200);
    expect((await call('/hs', bad)).status).toBe(401);
  });

  it('several static keys and a token without kid: each key of its algorithm is tried', async () => {
    const noKid = (alg: string, key: unknown, exp = now() + 60) =>
      new SignJWT({ iss: 'multi-issuer', aud: 'orders', sub: 'svc', exp })
        .setProtectedHeader({ alg })
        .sign(key as Parameters<SignJWT['sign']>[0]);
    expect((await call('/multi', await noKid('RS256', keys.rs2.privateKey))).status).toBe(200);
    expect((await call('/multi', await noKid('RS256', keys.rs3.privateKey))).status).toBe(200);
    expect((await call('/multi', await noKid('HS256', new TextEncoder().encode(HS_SECRET)))).status).toBe(
      200,
    );
    // No key verifies it: a bad signature. A key that verifies decides: its claims are checked.
    const stranger = await call('/multi', await noKid('RS256', keys.rs1.privateKey));
    expect([stranger.status, JSON.parse(stranger.body).detail]).toEqual([
      401,
      'the token signature is not valid',
    ]);
    const expired = await call('/multi', await noKid('RS256', keys.rs3.privateKey, now() - 3600));
    expect([expired.status, JSON.parse(expired.body).detail]).toEqual([401, 'the token has expired']);
  });

  it('a JWKS with several keys of the algorithm and a token without kid: each is tried (as Envoy does)', async () => {
    const noKid = (key: unknown) =>
      new SignJWT({ iss: 'pair-issuer', aud: 'orders', sub: 'svc', exp: now() + 60 })
        .setProtectedHeader({ alg: 'RS256' })
        .sign(key as Parameters<SignJWT['sign']>[0]);
    expect((await call('/pair', await noKid(keys.rs2.privateKey))).status).toBe(200);
    expect((await call('/pair', await noKid(keys.rs3.privateKey))).status).toBe(200);
    const stranger = await call('/pair', await noKid(keys.rs1.privateKey));
    expect([stranger.status, JSON.parse(stranger.body).detail]).toEqual([
      401,
      'the token signature is not valid',
    ]);
  });

  it.each([
    ['garbage', 'abc'],
    ['three garbage parts', 'a.b.c'],
    ['bad base64 JSON', `${b64url({ alg: 'RS256' })}.@@@.x`],
    ['an oversized token', 'a'.repeat(9000)],
  ])('a malformed token (%s) is 401, never 500', async (_what, token) => {
    const r = await call('/rs', token);
    expect(r.status).toBe(401);
  });

  it('another scheme than Bearer is 401', async () => {
    expect((await call('/rs', undefined, { authorization: 'Basic dXNlcjpwYXNz' })).status).toBe(401);
  });

  it('key rotation: an unknown kid fetches the JWKS once; another unknown kid within the cooldown does not', async () => {
    jwks = { keys: [...jwks.keys, { ...(await exportJWK(keys.rs2.publicKey)), kid: 'rs2', alg: 'RS256' }] };
    const before = fetches;
    expect((await call('/rs', await sign('rs2'))).status).toBe(200);
    expect(fetches).toBe(before + 1);
    expect((await call('/rs', await sign('rs3'))).status).toBe(401);
    expect(fetches).toBe(before + 1);
  });

  it('a cached token still stops working at its exp', async () => {
    // Whole seconds: exp at least 2 s ahead, then wait until just past it.
    const exp = now() + 2;
    const token = await sign('rs1', {}, { exp });
    expect((await call('/rs0', token)).status).toBe(200);
    expect((await call('/rs0', token)).status).toBe(200);
    await new Promise((r) => setTimeout(r, exp * 1000 - Date.now() + 300));
    const late = await call('/rs0', token);
    expect([late.status, JSON.parse(late.body).detail]).toEqual([401, 'the token has expired']);
  });

  it('a tampered copy of a cached token is verified on its own, and refused', async () => {
    const token = await sign('rs1');
    expect((await call('/rs', token)).status).toBe(200);
    const [h, p, sig] = token.split('.');
    const otherSub = Buffer.from(
      JSON.stringify({ ...JSON.parse(Buffer.from(p, 'base64url').toString()), sub: 'admin' }),
    ).toString('base64url');
    expect((await call('/rs', `${h}.${otherSub}.${sig}`)).status).toBe(401);
    const flipped = `${h}.${p}.${sig.slice(0, -2)}${sig.at(-2) === 'A' ? 'B' : 'A'}${sig.at(-1)}`;
    expect((await call('/rs', flipped)).status).toBe(401);
  });

  it('on one keep-alive connection, only the exact header last verified there is taken as verified', async () => {
    const client = new Client(dp.proxyUrl, { pipelining: 1 });
    let connects = 0;
    client.on('connect', () => connects++);
    const on = async (path: string, authorization: string) => {
      const r = await client.request({ path, method: 'GET', headers: { authorization } });
      await r.body.text();
      return r.statusCode;
    };
    try {
      const exp = now() + 2;
      const token = await sign('rs1', {}, { exp });
      const [h, p, sig] = token.split('.');
      const tampered = `${h}.${p}.${sig.slice(0, -2)}${sig.at(-2) === 'A' ? 'B' : 'A'}${sig.at(-1)}`;
      expect(await on('/rs0', `Bearer ${token}`)).toBe(200);
      expect(await on('/rs0', `Bearer ${tampered}`)).toBe(401);
      expect(await on('/rs0', `Bearer ${token}`)).toBe(200);
      expect(await on('/rs0', `Bearer ${token}x`)).toBe(401);
      expect(await on('/rs0', `Basic ${token}`)).toBe(401);
      // Another route's plugin instance does not take this one's verification.
      expect(await on('/hs', `Bearer ${token}`)).toBe(401);
      expect(await on('/rs0', `Bearer ${token}`)).toBe(200);
      await new Promise((r) => setTimeout(r, exp * 1000 - Date.now() + 300));
      expect(await on('/rs0', `Bearer ${token}`)).toBe(401);
      // All of it on the one connection: the case the per-connection check serves.
      expect(connects).toBe(1);
    } finally {
      await client.close();
    }
  });

  it('the identity provider down: known keys keep working', async () => {
    jwksDown = true;
    try {
      expect((await call('/rs', await sign('rs1'))).status).toBe(200);
      expect((await call('/rs', await sign('rs2'))).status).toBe(200);
    } finally {
      jwksDown = false;
    }
  });
});
