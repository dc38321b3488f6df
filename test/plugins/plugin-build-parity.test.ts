/**
 * Whatever a data plane refuses of a plugin config, the controller refuses first, on the
 * GatewayPlugin and at the field. A config only the data plane refused (an oidc cookie key
 * under 32 bytes, found when the plugin was built) reached every pod, which refused the whole
 * snapshot: no change applied anywhere. For a bad config of every plugin (and every check a
 * plugin's build makes of its Secrets' values), both sides run on it: the real data plane,
 * over HTTP, refuses the table the config would make; the controller's build puts the
 * problem on that GatewayPlugin, leaves its route out, and its snapshot applies.
 */
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GatewayPlugin, Resource, Secret } from '../../controller/api/index.ts';
import { configField } from '../../controller/api/gateway-plugin.ts';
import { build } from '../../controller/build.ts';
import { resourceSetFrom } from '../../controller/source/resource-set.ts';
import { resolveSecretRefs } from '../../controller/validate/secret-refs.ts';
import { PLUGIN_MANIFESTS, pluginManifest } from '../../dataplane/config/catalog.ts';
import { resolvedSecretField } from '../../dataplane/config/manifest.ts';
import type { DataPlane } from '../../dataplane/main.ts';
import { makeClientPki } from '../auth/client-pki.ts';
import { gatewayPlugin, gatewayRoute } from '../helpers/fixtures.ts';
import { startTestDataPlane, startUpstream, type Upstream } from '../helpers/servers.ts';
import { route, snapshot, upstream } from '../helpers/tables.ts';

const ref = (key: string) => ({ secretKeyRef: { name: 'creds', key } });
const BROKEN_PEM_KEY = '-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n';
const BROKEN_PEM_CERT = '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n';
const ISSUER = 'http://127.0.7.1:9';

interface Case {
  name: string;
  plugin: string;
  config: Record<string, unknown>;
  /** The Secret creds' values. */
  secrets?: Record<string, string>;
  /** The field the controller names, relative to the plugin's config field. */
  field: string;
  /** A check the plugin's build makes (of a Secret's value): the runtime build refuses it too. */
  build?: true;
}

let ca = '';
const oidcLogin = (cookie: string): Case => ({
  name: 'oidc-short-cookie-key',
  plugin: 'oidc',
  config: {
    issuer: ISSUER,
    audiences: ['orders'],
    algorithms: ['RS256'],
    login: {
      clientId: 'web',
      clientSecret: ref('client'),
      redirectUri: 'https://gw.test/app/callback',
      logoutPath: '/app/logout',
      cookieKeys: [ref('cookie')],
    },
  },
  secrets: { client: 'web-secret', cookie },
  field: 'login.cookieKeys[0]',
  build: true,
});
const cases = (): Case[] => [
  oidcLogin('31-bytes-is-one-byte-too-short!'),
  {
    name: 'jwt-broken-pem',
    plugin: 'jwt',
    config: { issuers: [{ issuer: ISSUER, audiences: ['a'], algorithms: ['RS256'], keys: [ref('pem')] }] },
    secrets: { pem: BROKEN_PEM_KEY },
    field: 'issuers[0].keys[0]',
    build: true,
  },
  {
    name: 'jwt-no-keys',
    plugin: 'jwt',
    config: { issuers: [{ issuer: ISSUER, audiences: ['a'], algorithms: ['RS256'] }] },
    field: 'issuers[0]',
  },
  {
    name: 'mtls-no-certificate',
    plugin: 'mtls-auth',
    config: { caBundle: ref('ca') },
    secrets: { ca: 'not a PEM bundle' },
    field: 'caBundle',
    build: true,
  },
  {
    name: 'mtls-broken-certificate',
    plugin: 'mtls-auth',
    config: { caBundle: ref('ca') },
    secrets: { ca: BROKEN_PEM_CERT },
    field: 'caBundle',
    build: true,
  },
  {
    name: 'mtls-broken-crl',
    plugin: 'mtls-auth',
    config: { caBundle: ref('ca'), crls: [ref('crl')] },
    secrets: { ca, crl: 'not a CRL' },
    field: 'crls[0]',
    build: true,
  },
  // The manifest's checks across fields, and its schema, for the plugins whose build reads no Secret value.
  { name: 'rate-limiting-no-window', plugin: 'rate-limiting', config: { limitBy: 'ip' }, field: '' },
  {
    name: 'idempotency-key-length',
    plugin: 'idempotency',
    config: { keyLength: { min: 40, max: 32 } },
    field: 'keyLength.min',
  },
  {
    name: 'proxy-cache-no-get',
    plugin: 'proxy-cache',
    config: { methods: ['HEAD'] },
    field: 'methods',
  },
  {
    name: 'cors-star-with-credentials',
    plugin: 'cors',
    config: { origins: ['*'], credentials: true },
    field: 'credentials',
  },
  {
    name: 'request-transformer-unknown-field',
    plugin: 'request-transformer',
    config: { bogus: true },
    field: 'bogus',
  },
  {
    name: 'response-transformer-unknown-field',
    plugin: 'response-transformer',
    config: { bogus: true },
    field: 'bogus',
  },
  {
    name: 'ip-restriction-bad-range',
    plugin: 'ip-restriction',
    config: { allow: ['10.0.0.0/8', '10.0.0.300/24'] },
    field: 'allow[1]',
  },
  {
    name: 'request-size-limiting-zero',
    plugin: 'request-size-limiting',
    config: { maxBytes: 0 },
    field: 'maxBytes',
  },
  {
    name: 'concurrency-limiting-zero',
    plugin: 'concurrency-limiting',
    config: { perClient: 0 },
    field: 'perClient',
  },
  {
    name: 'basic-auth-unknown-field',
    plugin: 'basic-auth',
    config: { credentials: [ref('auth')], bogus: true },
    secrets: { auth: 'foo:$apr1$OFG3Xybp$ckL0FHDAkoXYIlH9.cysT0' },
    field: 'bogus',
  },
  {
    name: 'ext-auth-unknown-field',
    plugin: 'ext-auth',
    config: { url: 'http://127.0.7.1:9/auth', bogus: true },
    field: 'bogus',
  },
  {
    name: 'key-auth-unknown-field',
    plugin: 'key-auth',
    config: { consumers: [{ name: 'a', ...ref('key') }], bogus: true },
    secrets: { key: 'an-api-key' },
    field: 'bogus',
  },
];

let up: Upstream;
let dp: DataPlane;
let removePki = () => {};
beforeAll(async () => {
  const pki = makeClientPki();
  ca = pki.ca;
  removePki = () => pki.remove();
  up = await startUpstream();
  dp = await startTestDataPlane();
});
afterAll(async () => {
  await dp?.close();
  await up?.close();
  removePki();
});

const put = async (body: unknown) => {
  const res = await request(`${dp.adminUrl}/config`, {
    method: 'PUT',
    body: JSON.stringify(body),
    headers: { 'content-type': 'application/json', authorization: `Bearer ${dp.adminToken}` },
  });
  return { status: res.statusCode, body: (await res.body.json()) as Record<string, unknown> };
};

const secretOf = (values: Record<string, string>): Secret => ({
  apiVersion: 'v1',
  kind: 'Secret',
  metadata: { name: 'creds', namespace: 'default' },
  stringData: values,
});

/** The table the config makes once its Secrets are resolved (the controller's resolution), checked by nothing else. */
function tableOf(c: Case) {
  const config = structuredClone(c.config);
  const plugin = gatewayPlugin(c.name, c.plugin as never, config);
  const as = resolvedSecretField(pluginManifest(c.plugin));
  expect(
    resolveSecretRefs(
      plugin.metadata as never,
      config,
      new Map([['default/creds', secretOf(c.secrets ?? {})]]),
      as,
    ),
  ).toEqual([]);
  return snapshot(
    [
      route(c.name, 'u', `/${c.name}`, {
        plugins: [
          {
            id: `plugin/default/${c.name}`,
            name: c.plugin as never,
            config,
            source: { kind: 'GatewayPlugin', namespace: 'default', name: c.name, generation: 1 },
          },
        ],
      }),
    ],
    [upstream('u', up.url)],
  );
}

describe('plugin config: the controller refuses what a data plane refuses', () => {
  it('has a bad config of every plugin', () => {
    expect(new Set(cases().map((c) => c.plugin))).toEqual(new Set(PLUGIN_MANIFESTS.map((m) => m.name)));
  });

  it.each(cases().map((c) => [c.name, c] as const))('%s', async (_name, lazy) => {
    const c = cases().find((x) => x.name === lazy.name)!; // built after the CA exists
    // The data plane refuses the table this config makes, at its door, naming the plugin's field.
    const table = tableOf(c);
    const refused = await put(table);
    expect(refused.status).toBe(422);
    const errors = refused.body.errors as { id?: string; field: string }[];
    expect(errors.map((e) => e.field)).toContain(`plugins[0].config${c.field ? `.${c.field}` : ''}`);
    if (c.build) {
      // A check of its build: the runtime build (past the door) refuses it too.
      expect(dp.holder.applyValid(table).result).toBe('rejected');
    }

    // The controller: the GatewayPlugin is refused at the field; its route is not served.
    const objects: Resource[] = [
      gatewayPlugin(c.name, c.plugin as never, structuredClone(c.config)) as GatewayPlugin,
      secretOf(c.secrets ?? {}) as unknown as Resource,
      gatewayRoute(c.name)
        .url(up.url)
        .plugins(c.name)
        .route(c.name, [`/${c.name}`])
        .build(),
      gatewayRoute('plain').url(up.url).route('plain', ['/plain']).build(),
    ];
    const built = build(resourceSetFrom(objects));
    const at = `spec.${configField(c.plugin)}${c.field ? `.${c.field}` : ''}`;
    const onPlugin = built.diagnostics.filter((d) => d.object.kind === 'GatewayPlugin');
    expect(onPlugin.map((d) => d.field)).toContain(at);
    expect(onPlugin.every((d) => d.object.name === c.name)).toBe(true);
    const [accepted] = built.status[`GatewayPlugin/default/${c.name}`].conditions;
    expect([accepted.status, accepted.message]).toEqual(['False', expect.stringContaining(at)]);
    // Its snapshot applies on the data plane: the other route is served, the plugin's is not.
    expect((await put(built.snapshot)).status).toBe(200);
    expect((await request(`${dp.proxyUrl}/plain`)).statusCode).toBe(200);
    const res = await request(`${dp.proxyUrl}/${c.name}`);
    await res.body.dump();
    expect(res.statusCode).toBe(404);
  });
});
