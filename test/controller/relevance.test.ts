/** Which informer events are worth a rebuild, and which objects build() reads (controller/source/relevance.ts). */
import { describe, expect, it } from 'vitest';
import type { Gateway } from '../../controller/api/gateway-api.ts';
import type { Secret, Service } from '../../controller/api/index.ts';
import { frontendCaRefs, frontendValidationFor } from '../../controller/gateway-api/frontend-tls.ts';
import {
  gatewayApiReferences,
  isReferenced,
  referencesOf,
  relevantObjects,
  specChanged,
} from '../../controller/source/relevance.ts';
import { addHeaders, gatewayPlugin, gatewayRoute } from '../helpers/fixtures.ts';

const secret = (name: string, namespace = 'default'): Secret => ({
  apiVersion: 'v1',
  kind: 'Secret',
  metadata: { name, namespace },
  data: {},
});
const service = (name: string, namespace = 'default'): Service => ({
  apiVersion: 'v1',
  kind: 'Service',
  metadata: { name, namespace },
  spec: { ports: [{ port: 80 }] },
});
const keyAuth = gatewayPlugin('keys', 'key-auth', {
  keys: [{ secretKeyRef: { name: 'api-keys', key: 'k' } }],
});
const route = gatewayRoute('web').backendRef('api', 80).route('all', ['/web']).build();

describe('specChanged', () => {
  const meta = (generation: number, labels?: Record<string, string>) => ({
    metadata: { name: 'r', namespace: 'default', generation, labels },
  });
  it('takes additions and deletions', () => {
    expect(specChanged('added', meta(1))).toBe(true);
    expect(specChanged('deleted', meta(1))).toBe(true);
  });
  it('ignores an update that leaves generation and labels alone (a status write)', () => {
    expect(specChanged('modified', meta(2, { a: '1' }), meta(2, { a: '1' }))).toBe(false);
  });
  it('takes a new generation or new labels', () => {
    expect(specChanged('modified', meta(3), meta(2))).toBe(true);
    expect(specChanged('modified', meta(2, { a: '2' }), meta(2, { a: '1' }))).toBe(true);
    expect(specChanged('modified', meta(2, { a: '1' }), meta(2))).toBe(true);
  });
});

describe('references', () => {
  it('only Secrets a plugin names and Services a route sends traffic to are referenced', () => {
    const refs = referencesOf([keyAuth], [route]);
    expect([...refs.secrets]).toEqual(['default/api-keys']);
    expect([...refs.services]).toEqual(['default/api']);
    expect(isReferenced(refs.secrets, secret('api-keys'))).toBe(true);
    expect(isReferenced(refs.secrets, secret('api-keys', 'other'))).toBe(false);
    expect(isReferenced(refs.secrets, secret('tls-cert'))).toBe(false);
    expect(isReferenced(refs.services, service('api'))).toBe(true);
    expect(isReferenced(refs.services, service('db'))).toBe(false);
  });

  it('build() reads every plugin and route, and only the referenced Secrets and Services', () => {
    const unused = addHeaders('unused', ['x-a:1']);
    const objects = relevantObjects(
      {
        plugins: [keyAuth, unused],
        routes: [route],
        secrets: [secret('api-keys'), secret('tls-cert')],
        services: [service('db'), service('api')],
      },
      referencesOf([keyAuth, unused], [route]),
    );
    expect(objects.map((o) => `${o.kind}/${o.metadata.name}`)).toEqual([
      'GatewayPlugin/keys',
      'GatewayPlugin/unused',
      'GatewayRoute/web',
      'Secret/api-keys',
      'Service/api',
    ]);
  });
});

describe("a Gateway's client CA bundles (spec.tls.frontend)", () => {
  const gateway: Gateway = {
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'Gateway',
    metadata: { name: 'gw', namespace: 'edge' },
    spec: {
      gatewayClassName: 'sluice',
      listeners: [{ name: 'https', port: 443, protocol: 'HTTPS' }],
      tls: {
        frontend: {
          default: { validation: { caCertificateRefs: [{ group: '', kind: 'ConfigMap', name: 'ca' }] } },
          perPort: [
            {
              port: 8443,
              tls: {
                validation: {
                  caCertificateRefs: [
                    { group: '', kind: 'Secret', name: 'ca-secret', namespace: 'pki' },
                    { group: '', kind: 'ConfigMap', name: 'other', namespace: 'pki' },
                    { group: '', kind: 'Service', name: 'not-a-bundle' },
                    { group: 'example.com', kind: 'ConfigMap', name: 'foreign-group' },
                  ],
                },
              },
            },
          ],
        },
      },
    },
  };
  it('names the ConfigMaps the source keeps, and the Secrets among the references (core group only)', () => {
    expect(frontendCaRefs([gateway])).toEqual({
      configMaps: new Set(['edge/ca', 'pki/other']),
      secrets: new Set(['pki/ca-secret']),
    });
    expect(gatewayApiReferences([gateway], []).secrets).toEqual(new Set(['pki/ca-secret']));
  });
  it('takes the perPort entry of a port, else the default', () => {
    expect(frontendValidationFor(gateway, 8443)?.at).toBe('spec.tls.frontend.perPort[0].tls.validation');
    expect(frontendValidationFor(gateway, 443)?.at).toBe('spec.tls.frontend.default.validation');
    expect(
      frontendValidationFor({ ...gateway, spec: { ...gateway.spec, tls: undefined } }, 443),
    ).toBeUndefined();
  });
});
