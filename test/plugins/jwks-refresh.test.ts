/**
 * A key the provider withdraws from its JWKS stops verifying within the JWKS's max age, in a
 * data plane, against a JWKS (and OpenID metadata) served on loopback: jwt's `jwksRefresh`,
 * oidc's `discoveryRefresh` (which reads the metadata and the keys again). Before, a withdrawn
 * key whose kid the cached set knew was trusted until a restart.
 */
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, type GenerateKeyPairResult, generateKeyPair, type JWK, SignJWT } from 'jose';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DataPlane } from '../../dataplane/main.ts';
import { startTestDataPlane, startUpstream, type Upstream } from '../helpers/servers.ts';
import { pluginInstance, route, snapshot, upstream } from '../helpers/tables.ts';

const HOST = '127.0.7.2';
let up: Upstream;
let dp: DataPlane;
let idp: Server;
let issuer = '';
const keys: Record<string, GenerateKeyPairResult> = {};
let published: JWK[] = [];
const jwksFetches = { count: 0 };

beforeAll(async () => {
  for (const kid of ['k1', 'k2'])
    keys[kid] = (await generateKeyPair('RS256', { extractable: true })) as GenerateKeyPairResult;
  published = [
    { ...(await exportJWK(keys.k1.publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' },
    { ...(await exportJWK(keys.k2.publicKey)), kid: 'k2', alg: 'RS256', use: 'sig' },
  ];
  idp = createServer((req, res) => {
    if (req.url === '/.well-known/openid-configuration') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ issuer, jwks_uri: `${issuer}/jwks` }));
      return;
    }
    jwksFetches.count++;
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: published }));
  });
  idp.listen(0, HOST);
  await once(idp, 'listening');
  issuer = `http://${HOST}:${(idp.address() as AddressInfo).port}`;
  up = await startUpstream();
  const rules = { audiences: ['orders'], algorithms: ['RS256'] };
  dp = await startTestDataPlane({
    initialSnapshot: snapshot(
      [
        route('jwt', 'u', '/jwt', {
          plugins: [
            pluginInstance('jwt', 'jwt', {
              issuers: [{ issuer, ...rules, jwksUri: `${issuer}/jwks`, jwksRefresh: '1s' }],
            }),
          ],
        }),
        route('oidc', 'u', '/oidc', {
          plugins: [pluginInstance('oidc', 'oidc', { issuer, ...rules, discoveryRefresh: '10s' })],
        }),
      ],
      [upstream('u', up.url)],
    ),
  });
});
afterAll(async () => {
  await dp?.close();
  await up?.close();
  idp?.close();
});

/** A fresh token (its own jti: never one the data plane remembers) signed with `kid`'s key. */
const token = (kid: string) =>
  new SignJWT({ iss: issuer, aud: 'orders', sub: 'user', exp: Math.floor(Date.now() / 1000) + 300 })
    .setProtectedHeader({ alg: 'RS256', kid })
    .setJti(randomUUID())
    .sign(keys[kid].privateKey);

const status = async (path: string, kid: string) => {
  const r = await request(`${dp.proxyUrl}${path}`, {
    headers: { authorization: `Bearer ${await token(kid)}` },
  });
  await r.body.dump();
  return r.statusCode;
};

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('a key withdrawn from the JWKS', () => {
  it('stops verifying within the max age (jwt: jwksRefresh; oidc: discoveryRefresh), known keys still do', async () => {
    expect(await status('/jwt', 'k2')).toBe(200);
    expect(await status('/oidc', 'k2')).toBe(200);
    published = published.filter((k) => k.kid !== 'k2');

    // jwt: within 1 s (and the one fetch a request waits for).
    await sleep(1_200);
    const before = jwksFetches.count;
    expect(await status('/jwt', 'k2')).toBe(401);
    expect(jwksFetches.count).toBeGreaterThan(before);
    expect(await status('/jwt', 'k1')).toBe(200);

    // oidc: the metadata and its keys are read again after discoveryRefresh (10 s).
    await sleep(9_000);
    expect(await status('/oidc', 'k2')).toBe(401);
    expect(await status('/oidc', 'k1')).toBe(200);
  }, 30_000);
});
