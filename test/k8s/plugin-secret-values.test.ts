/**
 * A GatewayPlugin whose Secret value no data plane can use (an oidc cookie key under 32 bytes),
 * on a real API server with the controller pushing to a data plane: the controller refuses that
 * plugin (Accepted=False naming the field), its route is not served, and every other object is
 * programmed and served as usual. The Secret fixed, the plugin is accepted and its route served.
 * Before, the snapshot reached the pod, which refused it whole: no change applied anywhere.
 */
import { randomBytes } from 'node:crypto';
import { request } from 'undici';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Controller } from '../../controller/main.ts';
import type { DataPlane } from '../../dataplane/main.ts';
import { crdsAndNamespace, startDataPlanesIn, startControllerIn } from '../helpers/controller-on-kapi.ts';
import { ok } from '../helpers/kubectl.ts';
import { startUpstream, type Upstream } from '../helpers/servers.ts';
import { waitFor } from '../helpers/until.ts';

const NS = `sluice-plugin-values-${randomBytes(3).toString('hex')}`;
const TOKEN = 'test-admin-token';
let up: Upstream;
let dp: DataPlane;
let controller: Controller;

const secret = (cookie: string) => `apiVersion: v1
kind: Secret
metadata: { name: web-login }
stringData: { client: web-secret, cookie: "${cookie}" }
`;

beforeAll(async () => {
  up = await startUpstream();
  await crdsAndNamespace(NS);
  [dp] = await startDataPlanesIn(NS, ['127.0.7.3']);
  await ok(
    ['apply', '-n', NS, '-f', '-'],
    `${secret('too-short')}---
apiVersion: sluice.dev/v1alpha1
kind: GatewayPlugin
metadata: { name: login }
spec:
  plugin: oidc
  oidc:
    issuer: http://127.0.7.4:9
    audiences: [web]
    algorithms: [RS256]
    login:
      clientId: web
      clientSecret: { secretKeyRef: { name: web-login, key: client } }
      redirectUri: https://shop.example/app/callback
      logoutPath: /app/logout
      cookieKeys: [{ secretKeyRef: { name: web-login, key: cookie } }]
---
apiVersion: sluice.dev/v1alpha1
kind: GatewayRoute
metadata: { name: app }
spec:
  service: { name: app, url: "${up.url}" }
  plugins: [{ name: login }]
  routes: [{ name: main, paths: [/app] }]
---
apiVersion: sluice.dev/v1alpha1
kind: GatewayRoute
metadata: { name: plain }
spec:
  service: { name: plain, url: "${up.url}" }
  routes: [{ name: main, paths: [/plain] }]
`,
  );
  controller = await startControllerIn(NS, TOKEN, 'plugin-values');
}, 60_000);

afterAll(async () => {
  await controller?.close();
  await dp?.close();
  await up?.close();
  await ok(['delete', 'namespace', NS, '--wait=false']).catch(() => {});
}, 30_000);

interface Cond {
  type: string;
  status: string;
  message?: string;
}
const conditions = async (kind: string, name: string): Promise<Record<string, Cond>> => {
  const obj = JSON.parse(await ok(['get', kind, name, '-n', NS, '-o', 'json'])) as {
    status?: { conditions?: Cond[] };
  };
  return Object.fromEntries((obj.status?.conditions ?? []).map((c) => [c.type, c]));
};
const status = async (path: string) => {
  const res = await request(`${dp.proxyUrl}${path}`);
  await res.body.dump();
  return res.statusCode;
};

it('refuses the plugin at the controller, naming the field; everything else is programmed and served', async () => {
  const accepted = await waitFor(
    'the plugin is refused',
    async () => (await conditions('gwp', 'login')).Accepted,
    (c) => c?.status === 'False',
  );
  expect(accepted.message).toContain(
    "spec.oidc.login.cookieKeys[0]: the Secret's value must hold at least 32 bytes",
  );
  await waitFor(
    'plain is programmed',
    async () => (await conditions('gwr', 'plain')).Programmed?.status,
    (s) => s === 'True',
  );
  expect(await status('/plain')).toBe(200);
  expect(await status('/app')).toBe(404);

  // The Secret fixed: the plugin is accepted and its route served (by the login: not a 404).
  await ok(['apply', '-n', NS, '-f', '-'], secret('a-cookie-key-of-thirty-two-bytes-at-least'));
  await waitFor(
    'the plugin is accepted',
    async () => (await conditions('gwp', 'login')).Accepted?.status,
    (s) => s === 'True',
  );
  await waitFor(
    'app is served',
    () => status('/app'),
    (s) => s !== 404,
  );
  expect(await status('/plain')).toBe(200);
}, 60_000);
