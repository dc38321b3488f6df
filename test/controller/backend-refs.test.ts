/** service.backendRef in a cluster: the Service must exist and expose the port (ResolvedRefs / BackendNotFound). */
import { describe, expect, it } from 'vitest';
import type { Service } from '../../controller/api/index.ts';
import { build } from '../../controller/build.ts';
import { referencedServices } from '../../controller/source/relevance.ts';
import { resourceSetFrom } from '../../controller/source/resource-set.ts';
import { gatewayRoute } from '../helpers/fixtures.ts';

const service = (name: string, ...ports: number[]): Service => ({
  apiVersion: 'v1',
  kind: 'Service',
  metadata: { name, namespace: 'default' },
  spec: { ports: ports.map((port) => ({ port })) },
});
const route = (backend: string, port: number) =>
  gatewayRoute('web').backendRef(backend, port).route('all', ['/web']).build();
const resolved = (r: ReturnType<typeof build>) => r.status['GatewayRoute/default/web'].conditions[1];

describe('backendRef in a cluster', () => {
  it('resolves when the Service exists with that port; the route is programmed', () => {
    const r = build(
      resourceSetFrom([route('api', 8080), service('api', 8080, 9090)], { withServices: true }),
    );
    expect(resolved(r)).toMatchObject({ status: 'True' });
    expect(r.snapshot.table.routes.map((x) => x.id)).toEqual(['route/default/web/all/0']);
    expect(r.snapshot.table.upstreams[0].url).toBe('http://api.default.svc:8080');
  });
  it('is BackendNotFound, naming the field, when the Service is missing; the route is left out', () => {
    const r = build(resourceSetFrom([route('api', 8080)], { withServices: true }));
    expect(resolved(r)).toMatchObject({
      status: 'False',
      reason: 'BackendNotFound',
      message: 'spec.service.backendRef.name: Service default/api not found',
    });
    expect(r.snapshot.table.routes).toEqual([]);
  });
  it('is BackendNotFound when the Service lacks the port', () => {
    const r = build(resourceSetFrom([route('api', 8081), service('api', 8080)], { withServices: true }));
    expect(resolved(r)).toMatchObject({ status: 'False', reason: 'BackendNotFound' });
    expect(resolved(r).message).toContain(
      'spec.service.backendRef.port: Service default/api has no port 8081 (it has 8080)',
    );
  });
  it('is not checked in standalone mode, where Services are unknown', () => {
    const r = build(resourceSetFrom([route('api', 8080)]));
    expect(resolved(r)).toMatchObject({ status: 'True' });
  });
  it('only Services a route sends traffic to are relevant', () => {
    expect([
      ...referencedServices([route('api', 80), gatewayRoute('other').url('http://x').build()]),
    ]).toEqual(['default/api']);
  });
});
