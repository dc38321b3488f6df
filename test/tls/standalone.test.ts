/**
 * Standalone mode over TLS, as a user runs it: `sluice run -f` a YAML file holding a
 * kubernetes.io/tls Secret, a GatewayRoute with spec.tls and httpsRedirect, and the full chain
 * (jwt, rate-limiting on Redis, idempotency on Redis), driven with curl over h2. Also the flags
 * in --help.
 */
import { execFile } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SluiceProcess, startSluice } from '../helpers/processes.ts';
import { dropPrefix, sharedRedisUrl, uniquePrefix } from '../helpers/redis.ts';
import { freePort, startUpstream, type Upstream } from '../helpers/servers.ts';
import { type Leaf, makePki, type Pki } from './pki.ts';
import { curl, handshake } from './tls-helpers.ts';

const HS_SECRET = 'a-shared-secret-of-32-bytes-or-more!!';
const HOST = 'api.example.test';
const indent = (pem: string) => pem.trimEnd().replaceAll('\n', '\n    ');

let pki: Pki;
let leaf: Leaf;
let fallback: Leaf;
let up: Upstream;
let sluice: SluiceProcess;
let httpsPort: number;
const prefix = uniquePrefix('tls');

const yaml = () => `
apiVersion: v1
kind: Secret
metadata: { name: api-cert, namespace: shop }
type: kubernetes.io/tls
stringData:
  tls.crt: |
    ${indent(leaf.cert)}
  tls.key: |
    ${indent(leaf.key)}
---
apiVersion: v1
kind: Secret
metadata: { name: jwt-key, namespace: shop }
stringData: { k: "${HS_SECRET}" }
---
apiVersion: sluice.dev/v1alpha1
kind: GatewayPlugin
metadata: { name: auth, namespace: shop }
spec:
  plugin: jwt
  jwt:
    issuers:
      - issuer: shop-issuer
        audiences: [orders]
        algorithms: [HS256]
        keys: [{ secretKeyRef: { name: jwt-key, key: k } }]
---
apiVersion: sluice.dev/v1alpha1
kind: GatewayPlugin
metadata: { name: limit, namespace: shop }
spec:
  plugin: rate-limiting
  rateLimiting: { minute: 4, policy: redis, limitBy: header, header: X-Client }
---
apiVersion: sluice.dev/v1alpha1
kind: GatewayPlugin
metadata: { name: idem, namespace: shop }
spec:
  plugin: idempotency
  idempotency: { ttl: 1h }
---
apiVersion: sluice.dev/v1alpha1
kind: GatewayRoute
metadata: { name: api, namespace: shop }
spec:
  service: { name: api, url: "${up.url}" }
  tls:
    - hosts: [${HOST}]
      secretName: api-cert
  routes:
    - name: api
      paths: [/api]
      httpsRedirect: true
      plugins: [{ name: auth }, { name: limit }, { name: idem }]
`;

beforeAll(async () => {
  pki = makePki();
  leaf = pki.leaf('api', [HOST]);
  fallback = pki.leaf('fallback', ['fallback.example.test']);
  up = await startUpstream();
  httpsPort = await freePort();
  sluice = await startSluice({
    yaml: yaml(),
    args: [
      '--https-port',
      String(httpsPort),
      '--tls-default-cert',
      fallback.certFile,
      '--tls-default-key',
      fallback.keyFile,
      '--https-redirect-port',
      String(httpsPort),
      '--redis',
      sharedRedisUrl,
      '--redis-prefix',
      prefix,
    ],
  });
});

afterAll(async () => {
  await sluice?.stop();
  await up?.close();
  await dropPrefix(sharedRedisUrl, prefix);
  pki?.remove();
});

const token = () =>
  new SignJWT({ sub: 'alice' })
    .setProtectedHeader({ alg: 'HS256' })
    .setIssuer('shop-issuer')
    .setAudience('orders')
    .setIssuedAt()
    .setExpirationTime('5m')
    .sign(new TextEncoder().encode(HS_SECRET));

describe('sluice run with a kubernetes.io/tls Secret in the file', () => {
  it('serves the Secret certificate by SNI, the default one otherwise', async () => {
    const api = await handshake(httpsPort, HOST, pki.ca);
    expect(api.authorized).toBe(true);
    expect(api.cert.subject.CN).toBe(HOST);
    expect((await handshake(httpsPort, 'other.example.test', pki.ca)).cert.subject.CN).toBe(
      'fallback.example.test',
    );
  });

  it('redirects plain HTTP to https on the configured port, before any plugin', async () => {
    const r = await curl('--http1.1', HOST, sluice.proxyPort, '/api/orders?page=2', pki.caFile, [], 'http');
    expect(r.status).toBe(308);
    expect(r.headers.location).toBe(`https://${HOST}:${httpsPort}/api/orders?page=2`);
  });

  it('runs jwt, rate-limiting (Redis) and idempotency (Redis) over h2', async () => {
    const h2 = (extra: string[]) => curl('--http2', HOST, httpsPort, '/api/orders', pki.caFile, extra);
    const anonymous = await h2(['-H', 'X-Client: c1']);
    expect(anonymous.version).toBe('2');
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers['content-type']).toBe('application/problem+json');

    const auth = ['-H', `authorization: Bearer ${await token()}`, '-H', 'X-Client: c1'];
    // The limit's window is the clock's minute: five requests that straddle its end would see the
    // count start again (a 200 where the fifth must get 429), so they start in a fresh minute's
    // first 50 s.
    const intoMinute = Date.now() % 60_000;
    if (intoMinute > 50_000) await sleep(60_000 - intoMinute + 100);
    const post = [
      '-X',
      'POST',
      '-H',
      'idempotency-key: order-0001-aaaaaaaaaaaaaaaaaaaaaaaaaaaa',
      '--data-binary',
      '{"item":7}',
    ];
    const first = await h2([...auth, ...post]);
    expect(first.status, first.body).toBe(200);
    expect(first.headers['ratelimit-policy']).toMatch(/^"minute";q=4;w=60/);
    const again = await h2([...auth, ...post]);
    expect(again.version).toBe('2');
    expect(again.status).toBe(200);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.body).toBe(first.body);
    expect(up.seen.filter((s) => s.method === 'POST')).toHaveLength(1);
    expect(up.seen[0].headers['x-forwarded-proto']).toBe('https');

    expect((await h2(auth)).status).toBe(200);
    expect((await h2(auth)).status).toBe(200);
    const limited = await h2(auth);
    expect(limited.status).toBe(429);
    expect(limited.headers['content-type']).toBe('application/problem+json');
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
  });
});

describe('--help', () => {
  it('documents the TLS flags of run and dataplane', async () => {
    const exec = promisify(execFile);
    for (const cmd of ['run', 'dataplane']) {
      const { stdout } = await exec(process.execPath, ['bin/sluice.ts', cmd, '--help']);
      for (const flag of ['--https-port', '--tls-default-cert', '--tls-default-key', '--https-redirect-port'])
        expect(stdout, `${cmd} ${flag}`).toContain(flag);
    }
  });
});
