/**
 * A GatewayRoute's balance.hashOn.setCookie (session affinity; what `sluice convert` writes for
 * ingress-nginx's affinity: cookie) becomes the upstream's hashOn.cookie.set: Path default "/",
 * maxAge in whole seconds; refused beside a header, or with a maxAge not whole seconds or over
 * 400 days, naming the field.
 */
import { describe, expect, it } from 'vitest';
import type { Resource } from '../../controller/api/index.ts';
import { build } from '../../controller/build.ts';
import { resourceSetFrom } from '../../controller/source/resource-set.ts';
import { validateRouteTable } from '../../dataplane/config/validate.ts';

const cluster: Resource[] = [
  {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: 'api', namespace: 'default' },
    spec: { ports: [{ name: 'http', port: 80 }] },
  } as Resource,
  {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: { name: 'api-x', namespace: 'default', labels: { 'kubernetes.io/service-name': 'api' } },
    addressType: 'IPv4',
    ports: [{ name: 'http', port: 9080 }],
    endpoints: [{ addresses: ['10.0.0.7'], conditions: { ready: true } }],
  } as unknown as Resource,
];
const route = (hashOn: Record<string, unknown>): Resource =>
  ({
    apiVersion: 'sluice.dev/v1alpha1',
    kind: 'GatewayRoute',
    metadata: { name: 'web', namespace: 'default', generation: 1 },
    spec: {
      service: {
        name: 'api',
        backendRef: { name: 'api', port: 80 },
        balance: { policy: 'consistent-hash', hashOn },
      },
      routes: [{ name: 'all', paths: ['/web'] }],
    },
  }) as unknown as Resource;

describe('balance.hashOn.setCookie', () => {
  it("becomes the upstream's sticky cookie", () => {
    const r = build(
      resourceSetFrom(
        [route({ cookie: 'route', setCookie: { maxAge: '48h', sameSite: 'Lax', secure: true } }), ...cluster],
        { withServices: true },
      ),
    );
    expect(r.diagnostics).toEqual([]);
    expect(validateRouteTable(r.snapshot.table)).toEqual([]);
    expect(r.snapshot.table.upstreams[0].balance).toEqual({
      policy: 'consistent-hash',
      hashOn: { cookie: 'route', set: { path: '/', maxAgeS: 172_800, sameSite: 'Lax', secure: true } },
    });
  });

  it.each([
    [{ header: 'X-Tenant', setCookie: {} }, 'spec.service.balance.hashOn.setCookie', 'needs hashOn.cookie'],
    [
      { cookie: 'c', setCookie: { maxAge: '1500ms' } },
      'spec.service.balance.hashOn.setCookie.maxAge',
      'whole seconds',
    ],
    [
      { cookie: 'c', setCookie: { maxAge: '9700h' } },
      'spec.service.balance.hashOn.setCookie.maxAge',
      '400 days',
    ],
  ])('is refused as %j', (hashOn, field, message) => {
    const r = build(resourceSetFrom([route(hashOn), ...cluster], { withServices: true }));
    expect(r.diagnostics).toEqual([
      expect.objectContaining({ field, message: expect.stringContaining(message) }),
    ]);
  });
});
