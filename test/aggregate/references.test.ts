/**
 * The services an aggregate calls are references like the route's own: in a cluster a missing
 * Service (or port) is BackendNotFound naming the call's field, and those Services are relevant
 * (their events rebuild the snapshot). And the CRD's rule "at most one handler kind per route".
 */
import { describe, expect, it } from 'vitest';
import type { Service } from '../../controller/api/index.ts';
import { atMostOneRule, HANDLER_FIELDS } from '../../controller/api/gateway-route.ts';
import { build } from '../../controller/build.ts';
import { referencedServices } from '../../controller/source/relevance.ts';
import { resourceSetFrom } from '../../controller/source/resource-set.ts';
import type { Resource } from '../../controller/api/index.ts';
import { gatewayRoute } from './helpers.ts';

const service = (name: string, ...ports: number[]): Service => ({
  apiVersion: 'v1',
  kind: 'Service',
  metadata: { name, namespace: 'test' },
  spec: { ports: ports.map((port) => ({ port })) },
});
const profile = gatewayRoute('profile', [
  {
    name: 'profile',
    paths: ['/profile'],
    aggregate: {
      calls: [
        { name: 'user', backendRef: { name: 'users', port: 8080 }, path: '/users' },
        { name: 'orders', backendRef: { name: 'orders', port: 8080 }, path: '/orders' },
      ],
    },
  },
]) as unknown as Resource;

describe('services an aggregate calls', () => {
  it('resolve when they exist: the calls go to their cluster DNS names', () => {
    const r = build(
      resourceSetFrom([profile, service('users', 8080), service('orders', 8080)], { withServices: true }),
    );
    expect(r.diagnostics).toEqual([]);
    const handler = r.snapshot.table.routes[0].handler;
    expect(handler.type).toBe('aggregate');
    const urls = r.snapshot.table.upstreams.map((u) => u.url).sort();
    expect(urls).toEqual(['http://orders.test.svc:8080', 'http://users.test.svc:8080']);
  });

  it('are BackendNotFound, naming the call, when missing or without the port; the route is left out', () => {
    const r = build(resourceSetFrom([profile, service('users', 9090)], { withServices: true }));
    expect(r.diagnostics.map((d) => [d.reason, d.field])).toEqual([
      ['BackendNotFound', 'spec.routes[0].aggregate.calls[0].backendRef.port'],
      ['BackendNotFound', 'spec.routes[0].aggregate.calls[1].backendRef.name'],
    ]);
    expect(r.snapshot.table.routes).toEqual([]);
  });

  it('are relevant Services', () => {
    expect([...referencedServices([profile as never])].sort()).toEqual(['test/orders', 'test/users']);
  });
});

describe('at most one handler kind per route', () => {
  it('every kind with a route field is a field of the rule', () => {
    expect(HANDLER_FIELDS).toEqual([
      { field: 'aggregate', kind: 'aggregate' },
      { field: 'soap', kind: 'soap' },
      { field: 'grpc', kind: 'grpc' },
    ]);
  });
  it('the CEL rule counts the kinds set once there are two or more', () => {
    expect(atMostOneRule(['aggregate'])).toEqual([]);
    expect(atMostOneRule(['aggregate', 'grpc'])).toEqual([
      {
        rule: '(has(self.aggregate) ? 1 : 0) + (has(self.grpc) ? 1 : 0) <= 1',
        message: 'at most one handler kind (aggregate, grpc) may be set',
      },
    ]);
  });
});
