/**
 * A basic-auth GatewayPlugin's credentials resolve as every secretKeyRef does
 * (validate/secret-refs.ts): the htpasswd value copied beside the reference (base64, the
 * manifest's `secrets: value`), the Secret among those a build reads; a missing key makes the
 * plugin ResolvedRefs=False (SecretNotFound) and its route is not served.
 */
import { describe, expect, it } from 'vitest';
import type { Resource } from '../../controller/api/index.ts';
import { build } from '../../controller/build.ts';
import { referencedSecrets } from '../../controller/source/relevance.ts';
import { resourceSetFrom } from '../../controller/source/resource-set.ts';

const HTPASSWD = 'foo:$apr1$OFG3Xybp$ckL0FHDAkoXYIlH9.cysT0\n';
const plugin = (key: string) =>
  ({
    apiVersion: 'sluice.dev/v1alpha1',
    kind: 'GatewayPlugin',
    metadata: { name: 'staff', namespace: 'default', generation: 1 },
    spec: {
      plugin: 'basic-auth',
      basicAuth: { realm: 'staff', credentials: [{ secretKeyRef: { name: 'users', key } }] },
    },
  }) as unknown as Resource;
const secret = {
  apiVersion: 'v1',
  kind: 'Secret',
  metadata: { name: 'users', namespace: 'default' },
  data: { auth: Buffer.from(HTPASSWD).toString('base64') },
} as unknown as Resource;
const route = {
  apiVersion: 'sluice.dev/v1alpha1',
  kind: 'GatewayRoute',
  metadata: { name: 'web', namespace: 'default', generation: 1 },
  spec: {
    service: { name: 'web', url: 'http://web.default.svc:80' },
    plugins: [{ name: 'staff' }],
    routes: [{ name: 'all', paths: ['/'] }],
  },
} as unknown as Resource;

describe('basic-auth GatewayPlugin credentials', () => {
  it('resolve to the htpasswd value beside the reference; the Secret is one a build reads', () => {
    expect([...referencedSecrets([plugin('auth') as never])]).toEqual(['default/users']);
    const r = build(resourceSetFrom([plugin('auth'), secret, route]));
    expect(r.diagnostics).toEqual([]);
    const [p] = r.snapshot.table.routes[0].plugins;
    expect(p.name).toBe('basic-auth');
    expect(p.config).toEqual({
      credentials: [
        { secretKeyRef: { key: 'auth', name: 'users' }, value: Buffer.from(HTPASSWD).toString('base64') },
      ],
      realm: 'staff',
    });
  });

  it('a key the Secret lacks: SecretNotFound, the plugin and its route not served', () => {
    const r = build(resourceSetFrom([plugin('nope'), secret, route]));
    expect(r.diagnostics).toContainEqual(
      expect.objectContaining({
        reason: 'SecretNotFound',
        field: 'spec.basicAuth.credentials[0].secretKeyRef',
      }),
    );
    expect(r.status['GatewayPlugin/default/staff'].conditions[1].status).toBe('False');
    expect(r.snapshot.table.routes).toEqual([]);
  });
});
