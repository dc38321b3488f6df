/**
 * The controller side of spec.tls beyond the golden files: the Secrets a route's spec.tls names
 * are read (relevance), and a Secret rotated in place gives a new snapshot carrying the new
 * certificate (the data plane then serves it on new connections: listener.test.ts).
 */
import { describe, expect, it } from 'vitest';
import type { GatewayRoute, Secret } from '../../controller/api/index.ts';
import { build } from '../../controller/build.ts';
import { isReferenced, referencesOf } from '../../controller/source/relevance.ts';
import { resourceSetFrom } from '../../controller/source/resource-set.ts';
import { makePki } from './pki.ts';

const route: GatewayRoute = {
  apiVersion: 'sluice.dev/v1alpha1',
  kind: 'GatewayRoute',
  metadata: { name: 'shop', namespace: 'shop', generation: 1 },
  spec: {
    service: { name: 'shop', url: 'http://shop.shop:8080' },
    tls: [{ hosts: ['a.example.test'], secretName: 'a-cert' }],
    routes: [{ name: 'all', paths: ['/'] }],
  },
};
const tlsSecret = (cert: string, key: string): Secret => ({
  apiVersion: 'v1',
  kind: 'Secret',
  metadata: { name: 'a-cert', namespace: 'shop' },
  type: 'kubernetes.io/tls',
  data: { 'tls.crt': Buffer.from(cert).toString('base64'), 'tls.key': Buffer.from(key).toString('base64') },
});

describe('spec.tls in the controller', () => {
  it("a route's spec.tls Secret is a referenced Secret (its events rebuild)", () => {
    const refs = referencesOf([], [route]);
    expect(isReferenced(refs.secrets, { metadata: { name: 'a-cert', namespace: 'shop' } } as never)).toBe(
      true,
    );
    expect(isReferenced(refs.secrets, { metadata: { name: 'a-cert', namespace: 'other' } } as never)).toBe(
      false,
    );
  });

  it('a rotated Secret gives a new snapshot with the new certificate', () => {
    const pki = makePki();
    try {
      const [one, two] = [pki.leaf('one', ['a.example.test']), pki.leaf('two', ['a.example.test'])];
      const first = build(resourceSetFrom([route, tlsSecret(one.cert, one.key)]));
      const second = build(resourceSetFrom([route, tlsSecret(two.cert, two.key)]));
      expect(first.diagnostics).toEqual([]);
      expect(first.snapshot.table.certificates).toEqual([
        { id: 'certificate/shop/a-cert', hosts: ['a.example.test'], cert: one.cert, key: one.key },
      ]);
      expect(second.snapshot.table.certificates?.[0].cert).toBe(two.cert);
      expect(second.snapshot.hash).not.toBe(first.snapshot.hash);
      expect(first.snapshot.table.routes).toHaveLength(1);
      // Without the Secret the route is not programmed, and says why.
      const missing = build(resourceSetFrom([route]));
      expect(missing.snapshot.table.routes).toEqual([]);
      expect(missing.status['GatewayRoute/shop/shop'].conditions[1]).toMatchObject({
        status: 'False',
        reason: 'SecretNotFound',
        message: 'spec.tls[0].secretName: Secret shop/a-cert not found',
      });
    } finally {
      pki.remove();
    }
  });
});
