/**
 * The objects and checks the GET /debug/config tests share (data plane and controller): a
 * GatewayRoute whose plugins hold every kind of Secret value the table can carry (a key-auth
 * key, a jwt HMAC secret, an oidc client secret and cookie key, a TLS private key), and the
 * assertion that none of them, in any form the table holds, is in an answer while the fields
 * that are not secret are.
 */
import { createHash } from 'node:crypto';
import { expect } from 'vitest';
import type { DebugConfig } from '../../dataplane/config/debug-config.ts';
import type { Leaf } from '../tls/pki.ts';

export const SECRET = {
  apiKey: 'alice-api-key-0123456789',
  jwtSecret: 'jwt-hmac-secret-of-32-bytes-000000',
  clientSecret: 'oidc-client-secret-abcdef',
  cookieKey: 'oidc-cookie-key-of-at-least-32-bytes!',
} as const;

export const TLS_HOST = 'api.debug.test';

/** The objects, as `kubectl apply -f` takes them (namespace from the caller, or none for file mode). */
export function debugConfigObjects(tls: Leaf, upstreamUrl: string, namespace?: string): string {
  const ns = namespace ? `, namespace: ${namespace}` : '';
  const b64 = (s: string) => Buffer.from(s).toString('base64');
  return `
apiVersion: v1
kind: Secret
metadata: { name: creds${ns} }
data:
  api-key: ${b64(SECRET.apiKey)}
  jwt: ${b64(SECRET.jwtSecret)}
  client: ${b64(SECRET.clientSecret)}
  cookie: ${b64(SECRET.cookieKey)}
---
apiVersion: v1
kind: Secret
metadata: { name: site-cert${ns} }
type: kubernetes.io/tls
data:
  tls.crt: ${b64(tls.cert)}
  tls.key: ${b64(tls.key)}
---
apiVersion: sluice.dev/v1alpha1
kind: GatewayPlugin
metadata: { name: keys${ns} }
spec:
  plugin: key-auth
  config:
    consumers: [{ name: alice, secretKeyRef: { name: creds, key: api-key } }]
---
apiVersion: sluice.dev/v1alpha1
kind: GatewayPlugin
metadata: { name: tokens${ns} }
spec:
  plugin: jwt
  config:
    issuers:
      - issuer: https://issuer.debug.test
        audiences: [debug]
        algorithms: [HS256]
        keys: [{ secretKeyRef: { name: creds, key: jwt } }]
---
apiVersion: sluice.dev/v1alpha1
kind: GatewayPlugin
metadata: { name: login${ns} }
spec:
  plugin: oidc
  config:
    issuer: https://idp.debug.test
    audiences: [debug]
    algorithms: [RS256]
    introspection:
      clientId: debug-gateway
      clientSecret: { secretKeyRef: { name: creds, key: client } }
    login:
      clientId: debug-web
      clientSecret: { secretKeyRef: { name: creds, key: client } }
      redirectUri: https://${TLS_HOST}/web/callback
      logoutPath: /web/logout
      cookieKeys: [{ secretKeyRef: { name: creds, key: cookie } }]
---
apiVersion: sluice.dev/v1alpha1
kind: GatewayRoute
metadata: { name: debug${ns} }
spec:
  service: { name: debug, url: "${upstreamUrl}" }
  tls: [{ secretName: site-cert, hosts: [${TLS_HOST}] }]
  routes:
    - { name: keyed, paths: [/keyed], plugins: [{ name: keys }] }
    - { name: tokens, paths: [/tokens], plugins: [{ name: tokens }] }
    - { name: web, paths: [/web], plugins: [{ name: login }] }
`;
}

/** Each secret in every form a table could hold it: clear, base64 (`value`), SHA-256 hex (`sha256`), PEM body lines. */
function forbidden(tls: Leaf): string[] {
  const forms = Object.values(SECRET).flatMap((s) => [
    s,
    Buffer.from(s).toString('base64'),
    createHash('sha256').update(s).digest('hex'),
  ]);
  const keyLines = tls.key.split('\n').filter((l) => l.length > 20 && !l.startsWith('-----'));
  return [...forms, ...keyLines, Buffer.from(tls.key).toString('base64').slice(0, 40)];
}

/** The answer holds no Secret value, says it is redacted, and keeps what is not secret. */
export function expectRedacted(text: string, tls: Leaf): void {
  for (const s of forbidden(tls)) expect(text, `the answer holds ${JSON.stringify(s)}`).not.toContain(s);
  const body = JSON.parse(text) as DebugConfig;
  expect(body.redacted).toMatch(/redacted/);
  const config = (route: string) =>
    body.table.routes.find((r) => r.id.includes(`/${route}/`))!.plugins[0].config as Record<string, never>;
  expect(config('keyed')).toMatchObject({
    consumers: [{ name: 'alice', secretKeyRef: { name: 'creds', key: 'api-key' }, sha256: '<redacted>' }],
  });
  expect(config('tokens')).toMatchObject({
    issuers: [
      { issuer: 'https://issuer.debug.test', keys: [{ secretKeyRef: { key: 'jwt' }, value: '<redacted>' }] },
    ],
  });
  expect(config('web')).toMatchObject({
    issuer: 'https://idp.debug.test',
    introspection: { clientId: 'debug-gateway', clientSecret: { value: '<redacted>' } },
    login: { clientId: 'debug-web', cookieKeys: [{ secretKeyRef: { key: 'cookie' }, value: '<redacted>' }] },
  });
  expect(body.table.certificates).toEqual([
    { id: expect.stringContaining('site-cert'), hosts: [TLS_HOST], cert: tls.cert, key: '<redacted>' },
  ]);
  // key-auth 1, jwt 1, oidc 3 (two client secrets, a cookie key), the certificate's key 1: nothing else.
  expect(JSON.stringify(body.table).split('<redacted>').length - 1).toBe(6);
}
