/**
 * The declared Kubernetes API access: paths derived from it, the RBAC verb of a REST call,
 * and Kube refusing a call the list does not declare (before any network).
 */
import { describe, expect, it } from 'vitest';
import { API_ACCESS, apiCall, assertDeclared, collectionPath } from '../../controller/source/api-access.ts';
import { Kube } from '../../controller/source/kube.ts';

describe('collectionPath', () => {
  it('is namespaced when given a namespace, cluster-wide with null', () => {
    expect(collectionPath('gatewayroutes', 'shop')).toBe(
      '/apis/sluice.dev/v1alpha1/namespaces/shop/gatewayroutes',
    );
    expect(collectionPath('secrets', null)).toBe('/api/v1/secrets');
    expect(collectionPath('services', 'a')).toBe('/api/v1/namespaces/a/services');
  });
});

describe('apiCall: the RBAC verb of a REST call', () => {
  it.each([
    ['GET', '/api/v1/namespaces/a/secrets?limit=500', false, '', 'secrets', 'list', 'a'],
    ['GET', '/api/v1/secrets', true, '', 'secrets', 'watch', null],
    [
      'GET',
      '/apis/coordination.k8s.io/v1/namespaces/s/leases/l',
      false,
      'coordination.k8s.io',
      'leases',
      'get',
      's',
    ],
    [
      'PUT',
      '/apis/coordination.k8s.io/v1/namespaces/s/leases/l',
      false,
      'coordination.k8s.io',
      'leases',
      'update',
      's',
    ],
    ['POST', '/api/v1/namespaces/a/events', false, '', 'events', 'create', 'a'],
    [
      'PATCH',
      '/apis/sluice.dev/v1alpha1/namespaces/a/gatewayroutes/r/status',
      false,
      'sluice.dev',
      'gatewayroutes/status',
      'patch',
      'a',
    ],
  ])('%s %s (watch %s) is %s %s', (method, path, watch, group, resource, verb, namespace) => {
    expect(apiCall(method, path, watch)).toMatchObject({ group, resource, verb, namespace });
  });
});

describe('assertDeclared', () => {
  it('accepts every declared verb of every declared resource', () => {
    for (const a of API_ACCESS) {
      const base = a.group === '' ? `/api/${a.version}` : `/apis/${a.group}/${a.version}`;
      const [plural, sub] = a.resource.split('/');
      const object = `${base}/namespaces/n/${plural}/x${sub ? `/${sub}` : ''}`;
      const collection = `${base}/namespaces/n/${plural}`;
      for (const verb of a.verbs) {
        const [method, path, watch] = {
          get: ['GET', object, false],
          list: ['GET', collection, false],
          watch: ['GET', collection, true],
          create: ['POST', collection, false],
          update: ['PUT', object, false],
          patch: ['PATCH', object, false],
          delete: ['DELETE', object, false],
        }[verb] as [string, string, boolean];
        expect(() => assertDeclared(method, path, watch), `${verb} ${a.resource}`).not.toThrow();
      }
    }
  });

  it('refuses an undeclared verb or resource, naming the call and the file', () => {
    expect(() => assertDeclared('DELETE', '/api/v1/namespaces/a/secrets/s')).toThrow(
      /undeclared Kubernetes API call DELETE \/api\/v1\/namespaces\/a\/secrets\/s.*api-access\.ts/,
    );
    expect(() => assertDeclared('GET', '/api/v1/namespaces/a/secrets/s')).toThrow(/undeclared/);
    expect(() => assertDeclared('GET', '/api/v1/pods')).toThrow(/undeclared/);
    expect(() => assertDeclared('PATCH', '/apis/sluice.dev/v1alpha1/namespaces/a/gatewayroutes/r')).toThrow(
      /undeclared/,
    );
  });

  it('Kube refuses an undeclared call before it reaches the network', async () => {
    // Nothing listens on port 1: a request that went out would fail with ECONNREFUSED instead.
    const kube = new Kube({ server: 'https://127.0.0.1:1', prepare: async () => ({ headers: {} }) });
    await expect(kube.get('/api/v1/namespaces/a/persistentvolumeclaims')).rejects.toThrow(
      /undeclared Kubernetes API call/,
    );
    await expect(
      kube.watch(
        '/api/v1/pods',
        '',
        () => {},
        () => {},
      ),
    ).rejects.toThrow(/undeclared/);
    await expect(kube.get('/api/v1/namespaces/a/secrets')).rejects.toThrow(/ECONNREFUSED|fetch failed/);
  });
});
