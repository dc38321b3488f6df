/**
 * backendRefs of versions and of canary backends in a cluster: like service.backendRef, each
 * Service must exist with the port (ResolvedRefs / BackendNotFound naming the field), and each is
 * a Service the controller watches for the route.
 */
import { describe, expect, it } from 'vitest';
import type { GatewayRoute, Service } from '../../controller/api/index.ts';
import { build } from '../../controller/build.ts';
import { referencedServices } from '../../controller/source/relevance.ts';
import { resourceSetFrom } from '../../controller/source/resource-set.ts';

const service = (name: string, port: number): Service => ({
  apiVersion: 'v1',
  kind: 'Service',
  metadata: { name, namespace: 'default' },
  spec: { ports: [{ port }] },
});
const route: GatewayRoute = {
  apiVersion: 'sluice.dev/v1alpha1',
  kind: 'GatewayRoute',
  metadata: { name: 'web', namespace: 'default', generation: 1 },
  spec: {
    service: { name: 'web', url: 'http://web:8080' },
    versions: [
      { name: 'v1', path: '/v1', backendRef: { name: 'web-v1', port: 8080 } },
      {
        name: 'v2',
        path: '/v2',
        backends: [
          { backendRef: { name: 'web-v2', port: 8080 }, weight: 90 },
          { backendRef: { name: 'web-v2-canary', port: 8080 }, weight: 10 },
        ],
      },
    ],
    routes: [{ name: 'all', paths: ['/web'] }],
  },
};
const resolved = (r: ReturnType<typeof build>) =>
  r.status['GatewayRoute/default/web'].conditions.find((c) => c.type === 'ResolvedRefs')!;

describe("versions' backendRefs in a cluster", () => {
  it('resolve when every Service exists with its port: cluster DNS upstreams, the canary among them', () => {
    const services = [service('web-v1', 8080), service('web-v2', 8080), service('web-v2-canary', 8080)];
    const r = build(resourceSetFrom([route, ...services], { withServices: true }));
    expect(resolved(r)).toMatchObject({ status: 'True' });
    expect(r.snapshot.table.upstreams.map((u) => u.url).sort()).toEqual([
      'http://web-v1.default.svc:8080',
      'http://web-v2-canary.default.svc:8080',
      'http://web-v2.default.svc:8080',
    ]);
  });
  it('a missing canary Service or a wrong port is BackendNotFound naming the field; the route is left out', () => {
    const r = build(
      resourceSetFrom([route, service('web-v1', 9090), service('web-v2', 8080)], { withServices: true }),
    );
    expect(resolved(r)).toMatchObject({ status: 'False', reason: 'BackendNotFound' });
    expect(resolved(r).message).toContain(
      'spec.versions[0].backendRef.port: Service default/web-v1 has no port 8080',
    );
    expect(resolved(r).message).toContain(
      'spec.versions[1].backends[1].backendRef.name: Service default/web-v2-canary not found',
    );
    expect(r.snapshot.table.routes).toEqual([]);
  });
  it('are Services the controller watches for the route', () => {
    expect([...referencedServices([route])].sort()).toEqual([
      'default/web-v1',
      'default/web-v2',
      'default/web-v2-canary',
    ]);
  });
});
