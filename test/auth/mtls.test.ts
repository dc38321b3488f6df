/**
 * mtls-auth on the TLS listener, with CAs made by openssl: a good client (its CN or SAN URI the
 * consumer), an expired one, one of another CA, a revoked one (the CA's CRL), none at all, and
 * a forged X-Forwarded-Client-Cert; two plugins with different CAs on one listener, a route
 * without the plugin unaffected, and the consumer in the rate limit and idempotency scope.
 */
import { randomUUID } from 'node:crypto';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DataPlane } from '../../dataplane/main.ts';
import { capturedLog, startTestDataPlane, startUpstream, type Upstream } from '../helpers/servers.ts';
import { idempotencyPlugin, rateLimitPlugin, route, upstream } from '../helpers/tables.ts';
import { makePki, type Pki } from '../tls/pki.ts';
import { certificate, curl, tlsSnapshot } from '../tls/tls-helpers.ts';
import { type ClientLeaf, type ClientPki, makeClientPki, mtlsPlugin } from './client-pki.ts';

const HOST = 'api.example.test';
let serverPki: Pki;
let caA: ClientPki;
let caB: ClientPki;
let up: Upstream;
let dp: DataPlane;
let port: number;
const leaves: Record<string, ClientLeaf> = {};
const captured = capturedLog();
const b64 = (s: string) => Buffer.from(s).toString('base64');

beforeAll(async () => {
  serverPki = makePki();
  caA = makeClientPki('Client CA A');
  caB = makeClientPki('Client CA B');
  leaves.good = caA.leaf('orders-client', ['URI:spiffe://shop/orders', 'DNS:orders.shop.test']);
  leaves.stranger = caA.leaf('stranger');
  leaves.expired = caA.leaf('orders-client', [], { start: '20200101000000Z', end: '20200102000000Z' });
  leaves.revoked = caA.leaf('orders-client');
  caA.revoke(leaves.revoked);
  leaves.b = caB.leaf('billing-client');
  const crl = { secretKeyRef: { name: 'ca', key: 'crl' }, value: b64(caA.crl()) };
  const team = { crls: [crl], consumers: [{ name: 'orders-team', values: ['orders-client'] }] };
  up = await startUpstream();
  const server = serverPki.leaf('server', [HOST]);
  dp = await startTestDataPlane({
    accessLog: true,
    log: captured.log,
    httpsPort: 0,
    initialSnapshot: tlsSnapshot(
      [
        route('m', 'u', '/m', {
          plugins: [mtlsPlugin('m', caA, { ...team, forwardClientCert: {} }), idempotencyPlugin('idem')],
        }),
        route('uri', 'u', '/uri', { plugins: [mtlsPlugin('uri', caA, { crls: [crl], identity: 'sanURI' })] }),
        route('rl', 'u', '/rl', {
          plugins: [mtlsPlugin('rl', caA, team), rateLimitPlugin('two', { minute: 2, policy: 'local' })],
        }),
        route('b', 'u', '/b', { plugins: [mtlsPlugin('b', caB)] }),
        route('plain', 'u', '/plain'),
      ],
      [upstream('u', up.url)],
      [certificate('server', [HOST], server)],
    ),
  });
  port = Number(new URL(dp.httpsUrl).port);
});
afterAll(async () => {
  await dp.close();
  await up.close();
  for (const p of [caA, caB]) p.remove();
  serverPki.remove();
});

const agents = new Map<string, Agent>();
const agent = (who: string | null) => {
  const id = who ?? 'none';
  let a = agents.get(id);
  if (a === undefined) {
    const leaf = who === null ? undefined : leaves[who];
    a = new Agent({
      connect: {
        ca: serverPki.ca,
        servername: HOST,
        ...(leaf ? { cert: leaf.cert, key: leaf.key } : {}),
      },
    });
    agents.set(id, a);
  }
  return a;
};

const call = async (
  who: string | null,
  path: string,
  headers: Record<string, string> = {},
  method = 'GET',
) => {
  const r = await request(`https://127.0.0.1:${port}${path}`, {
    dispatcher: agent(who),
    method: method as 'GET',
    headers: { host: HOST, ...headers },
    body: method === 'POST' ? '{"a":1}' : undefined,
  });
  const body = await r.body.text();
  return {
    status: r.statusCode,
    headers: r.headers,
    code: r.statusCode >= 400 ? (JSON.parse(body) as { code: string; detail: string }).code : undefined,
    detail: r.statusCode >= 400 ? (JSON.parse(body) as { detail: string }).detail : undefined,
  };
};

describe('mtls-auth', () => {
  it('a good client passes; the upstream gets its certificate in X-Forwarded-Client-Cert, a forged copy replaced', async () => {
    const r = await call('good', '/m', { 'x-forwarded-client-cert': 'Hash=forged;Subject="CN=admin"' });
    expect(r.status).toBe(200);
    const xfcc = up.seen.at(-1)!.headers['x-forwarded-client-cert'] as string;
    expect(xfcc).toMatch(
      /^Hash=[0-9a-f]{64};Subject="CN=orders-client";URI=spiffe:\/\/shop\/orders;DNS=orders.shop.test$/,
    );
  });

  it('a forged X-Forwarded-Client-Cert never reaches the upstream, on a route without the plugin either', async () => {
    const r = await call(null, '/plain', { 'x-forwarded-client-cert': 'Hash=forged;Subject="CN=admin"' });
    expect(r.status).toBe(200);
    expect(up.seen.at(-1)!.headers['x-forwarded-client-cert']).toBeUndefined();
  });

  it('the identity may be the SAN URI: it becomes the consumer', async () => {
    expect((await call('good', '/uri')).status).toBe(200);
  });

  it.each([
    ['no certificate', null, 'a client certificate is required (over TLS)'],
    ['an expired certificate', 'expired', 'the certificate has expired'],
    ['a certificate of another CA', 'b', 'the certificate is not issued by a trusted CA'],
    ['a revoked certificate (CRL)', 'revoked', 'the certificate is revoked'],
  ])('%s: 401', async (_what, who, detail) => {
    const r = await call(who, '/m');
    expect([r.status, r.code, r.detail]).toEqual([401, 'SLC_ERR_CLIENT_CERT_MISSING', detail]);
  });

  it('a verified certificate no consumer lists: 403', async () => {
    const r = await call('stranger', '/m');
    expect([r.status, r.code]).toEqual([403, 'SLC_ERR_CLIENT_CERT_FORBIDDEN']);
  });

  it('two plugins with different CAs share the listener: each accepts its own clients only', async () => {
    expect((await call('b', '/b')).status).toBe(200);
    expect((await call('good', '/b')).status).toBe(401);
  });

  it('a route without the plugin is served with or without a certificate', async () => {
    expect((await call(null, '/plain')).status).toBe(200);
    expect((await call('b', '/plain')).status).toBe(200);
  });

  it('the consumer is the rate limit key: two connections of one consumer share its bucket', async () => {
    expect((await call('good', '/rl')).status).toBe(200);
    const other = new Agent({
      connect: { ca: serverPki.ca, servername: HOST, cert: leaves.good.cert, key: leaves.good.key },
    });
    const r = await request(`https://127.0.0.1:${port}/rl`, { dispatcher: other, headers: { host: HOST } });
    await r.body.dump();
    await other.close();
    expect(r.statusCode).toBe(200);
    const third = await call('good', '/rl');
    expect([third.status, third.code]).toEqual([429, 'SLC_ERR_RATE_LIMITED']);
  });

  it('idempotency records belong to the certificate consumer', async () => {
    const h = { 'idempotency-key': `k-${randomUUID()}`, 'content-type': 'application/json' };
    const first = await call('good', '/m', h, 'POST');
    const again = await call('good', '/m', h, 'POST');
    expect([first.status, again.status]).toEqual([200, 200]);
    expect(again.headers['idempotent-replayed']).toBe('true');
  });

  it('the access log names the consumer the certificate maps to', async () => {
    await call('good', '/m');
    await new Promise((r) => setTimeout(r, 100));
    const lines = captured
      .text()
      .split('\n')
      .filter((l) => l.includes('"route":"route/test/m/m/0"'));
    expect(lines.some((l) => l.includes('"consumer":"orders-team"'))).toBe(true);
  });

  it('over h2 (curl) too: a good client passes, none is refused', async () => {
    const cert = ['--cert', leaves.good.certFile, '--key', leaves.good.keyFile];
    const ok = await curl('--http2', HOST, port, '/m', serverPki.caFile, cert);
    expect([ok.version, ok.status]).toEqual(['2', 200]);
    const none = await curl('--http2', HOST, port, '/m', serverPki.caFile);
    expect([none.version, none.status]).toEqual(['2', 401]);
  });

  it('over cleartext the route refuses with 401', async () => {
    const r = await request(`${dp.proxyUrl}/m`);
    expect(r.statusCode).toBe(401);
    expect(((await r.body.json()) as { code: string }).code).toBe('SLC_ERR_CLIENT_CERT_MISSING');
  });
});
