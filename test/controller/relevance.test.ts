/** Which informer events are worth a rebuild, and which objects build() reads (controller/source/relevance.ts). */
import { describe, expect, it } from 'vitest';
import type { Secret, Service } from '../../controller/api/index.ts';
import {
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
