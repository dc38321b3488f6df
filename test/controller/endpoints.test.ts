/**
 * backendRefs in a cluster resolve to the ready endpoints of the Service's EndpointSlices
 * (controller/validate/endpoints.ts), and those become the upstream's endpoints in the table;
 * the upstream's id and url stay the Service's, whatever the endpoints.
 */
import { describe, expect, it } from 'vitest';
import type { EndpointSlice, GatewayRoute, Service } from '../../controller/api/index.ts';
import { build } from '../../controller/build.ts';
import { relevantObjects, referencesOf } from '../../controller/source/relevance.ts';
import { resourceSetFrom } from '../../controller/source/resource-set.ts';
import { readyEndpoints } from '../../controller/validate/endpoints.ts';
import { validateRouteTable } from '../../dataplane/config/validate.ts';
import { gatewayRoute } from '../helpers/fixtures.ts';

const service = (name: string, ports: { name?: string; port: number }[]): Service => ({
  apiVersion: 'v1',
  kind: 'Service',
  metadata: { name, namespace: 'default' },
  spec: { ports },
});
type SliceEndpoint = NonNullable<EndpointSlice['endpoints']>[number];
const slice = (
  name: string,
  service: string,
  ports: EndpointSlice['ports'],
  endpoints: SliceEndpoint[],
  addressType: EndpointSlice['addressType'] = 'IPv4',
): EndpointSlice => ({
  apiVersion: 'discovery.k8s.io/v1',
  kind: 'EndpointSlice',
  metadata: { name, namespace: 'default', labels: { 'kubernetes.io/service-name': service } },
  addressType,
  ports,
  endpoints,
});
const at = (address: string, ready?: boolean): SliceEndpoint => ({
  addresses: [address],
  ...(ready !== undefined && { conditions: { ready } }),
});
const route = (backend: string, port: number) =>
  gatewayRoute('web').backendRef(backend, port).route('all', ['/web']).build();

describe('readyEndpoints', () => {
  it('the ready endpoints on the named port, once each across slices, in address order', () => {
    const slices = [
      slice(
        'api-a',
        'api',
        [
          { name: 'http', port: 9080 },
          { name: 'admin', port: 9901 },
        ],
        [at('10.0.0.2'), at('10.0.0.1', true), at('10.0.0.3', false)],
      ),
      slice('api-b', 'api', [{ name: 'http', port: 9080 }], [at('10.0.0.2'), at('10.0.0.4')]),
      slice('api-c', 'api', [{ name: 'http', port: 9080 }], [at('api.example.com')], 'FQDN'),
    ];
    expect(readyEndpoints(slices, 'http')).toEqual([
      { address: '10.0.0.1', port: 9080 },
      { address: '10.0.0.2', port: 9080 },
      { address: '10.0.0.4', port: 9080 },
    ]);
    expect(readyEndpoints(slices, 'admin')).toEqual([
      { address: '10.0.0.1', port: 9901 },
      { address: '10.0.0.2', port: 9901 },
    ]);
  });

  it('an unnamed Service port matches the slice port without a name; a malformed slice adds nothing', () => {
    const slices = [
      slice('a', 'api', [{ port: 8080 }], [at('fd00::1'), { addresses: [] }]),
      slice('b', 'api', [{ port: 0 }], [at('10.0.0.9')]),
      slice('c', 'api', null, [at('10.0.0.8')]),
    ];
    expect(readyEndpoints(slices, '')).toEqual([{ address: 'fd00::1', port: 8080 }]);
  });
});

describe('backendRef endpoints in the table', () => {
  const svc = service('api', [
    { name: 'http', port: 80 },
    { name: 'grpc', port: 81 },
  ]);
  const slices = [slice('api-x', 'api', [{ name: 'http', port: 9080 }], [at('10.0.0.7'), at('10.0.0.6')])];

  it("the upstream of a backendRef lists the Service's ready endpoints; its url and id stay the Service's", () => {
    const r = build(resourceSetFrom([route('api', 80), svc, ...slices], { withServices: true }));
    expect(r.diagnostics).toEqual([]);
    const [u] = r.snapshot.table.upstreams;
    expect(u.url).toBe('http://api.default.svc:80');
    expect(u.endpoints).toEqual([
      { address: '10.0.0.6', port: 9080 },
      { address: '10.0.0.7', port: 9080 },
    ]);
    // Another endpoint: same id (warm pools kept), another snapshot.
    const moved = [slice('api-x', 'api', [{ name: 'http', port: 9080 }], [at('10.0.0.8')])];
    const r2 = build(resourceSetFrom([route('api', 80), svc, ...moved], { withServices: true }));
    expect(r2.snapshot.table.upstreams[0].id).toBe(u.id);
    expect(r2.snapshot.table.upstreams[0].endpoints).toEqual([{ address: '10.0.0.8', port: 9080 }]);
    expect(r2.snapshot.hash).not.toBe(r.snapshot.hash);
  });

  it('slices with no ready endpoint give an empty list (the data plane answers 503 until one is ready)', () => {
    const down = [slice('api-x', 'api', [{ name: 'http', port: 9080 }], [at('10.0.0.7', false)])];
    const r = build(resourceSetFrom([route('api', 80), svc, ...down], { withServices: true }));
    expect(r.snapshot.table.upstreams[0].endpoints).toEqual([]);
  });

  it('a Service without EndpointSlices is reached by its cluster DNS name, as before', () => {
    const r = build(resourceSetFrom([route('api', 80), svc], { withServices: true }));
    expect(r.snapshot.table.upstreams[0]).not.toHaveProperty('endpoints');
    expect(r.snapshot.table.upstreams[0].url).toBe('http://api.default.svc:80');
  });

  it('only the slices of Services a route sends traffic to reach the build', () => {
    const other = slice('other-x', 'other', [{ name: 'http', port: 1 }], [at('10.0.0.1')]);
    const routes = [route('api', 80)];
    const objects = relevantObjects(
      { plugins: [], routes, secrets: [], services: [svc], endpointSlices: [...slices, other] },
      referencesOf([], routes),
    );
    expect(objects.filter((o) => o.kind === 'EndpointSlice').map((o) => o.metadata.name)).toEqual(['api-x']);
  });
});

describe('balance over the endpoints', () => {
  const svc = (name: string) => service(name, [{ name: 'http', port: 80 }]);
  const slices = (name: string, address: string) => [
    slice(`${name}-x`, name, [{ name: 'http', port: 9080 }], [at(address)]),
  ];
  const cluster = [svc('api'), ...slices('api', '10.0.0.7'), svc('next'), ...slices('next', '10.0.0.8')];
  const hashed = gatewayRoute('web')
    .backendRef('api', 80)
    .balance({ policy: 'consistent-hash', hashOn: { header: 'X-Tenant' } })
    .route('all', ['/web'])
    .build();

  it("spec.service.balance becomes the upstream's balance (header name lower-cased); it is part of the upstream's id", () => {
    const r = build(resourceSetFrom([hashed, ...cluster], { withServices: true }));
    expect(r.diagnostics).toEqual([]);
    expect(validateRouteTable(r.snapshot.table)).toEqual([]);
    const [u] = r.snapshot.table.upstreams;
    expect(u.balance).toEqual({ policy: 'consistent-hash', hashOn: { header: 'x-tenant' } });
    expect(u.endpoints).toEqual([{ address: '10.0.0.7', port: 9080 }]);
    const cookie = structuredClone(hashed);
    cookie.spec.service.balance = { policy: 'consistent-hash', hashOn: { cookie: 'session' } };
    const r2 = build(resourceSetFrom([cookie, ...cluster], { withServices: true }));
    expect(r2.snapshot.table.upstreams[0].balance).toEqual({
      policy: 'consistent-hash',
      hashOn: { cookie: 'session' },
    });
    expect(r2.snapshot.table.upstreams[0].id).not.toBe(u.id);
    // No balance: the id the upstream had before balance existed (round robin is the data plane's default).
    const plain = build(resourceSetFrom([route('api', 80), ...cluster], { withServices: true }));
    expect(plain.snapshot.table.upstreams[0]).not.toHaveProperty('balance');
    expect(plain.snapshot.table.upstreams[0].id).not.toBe(u.id);
  });

  it('a Service without EndpointSlices is dialled by its name: its balance stays out of the table', () => {
    const r = build(resourceSetFrom([hashed, svc('api')], { withServices: true }));
    expect(r.diagnostics).toEqual([]);
    expect(r.snapshot.table.upstreams[0]).not.toHaveProperty('balance');
    expect(r.snapshot.table.upstreams[0]).not.toHaveProperty('endpoints');
  });

  it("versions: a backendRef's own balance, else the service's; a url backend has none", () => {
    const obj = gatewayRoute('web')
      .backendRef('api', 80)
      .balance({ policy: 'least-request' })
      .route('all', ['/web'])
      .build();
    obj.spec.versions = [
      { name: 'v1', path: '/v1' },
      { name: 'v2', path: '/v2', backendRef: { name: 'next', port: 80 } },
      {
        name: 'v3',
        path: '/v3',
        backends: [
          {
            backendRef: { name: 'next', port: 80 },
            weight: 90,
            balance: { policy: 'consistent-hash', hashOn: { cookie: 'session' } },
          },
          { url: 'http://10.0.0.9:8080', weight: 10 },
        ],
      },
    ];
    const r = build(resourceSetFrom([obj, ...cluster], { withServices: true }));
    expect(r.diagnostics).toEqual([]);
    expect(validateRouteTable(r.snapshot.table)).toEqual([]);
    const byId = new Map(r.snapshot.table.upstreams.map((u) => [u.id, u]));
    const of = (path: string) => {
      const route = r.snapshot.table.routes.find((x) => x.match.path.value === `${path}/web`)!;
      const h = route.handler as { upstream: string; canary?: { upstream: string } };
      return [byId.get(h.upstream)!, h.canary && byId.get(h.canary.upstream)] as const;
    };
    expect(of('/v1')[0]).toMatchObject({
      url: 'http://api.default.svc:80',
      balance: { policy: 'least-request' },
    });
    expect(of('/v2')[0]).toMatchObject({
      url: 'http://next.default.svc:80',
      balance: { policy: 'least-request' },
    });
    const [main, canary] = of('/v3');
    expect(main).toMatchObject({
      url: 'http://next.default.svc:80',
      balance: { policy: 'consistent-hash', hashOn: { cookie: 'session' } },
    });
    // The same Service with two balances: two upstreams.
    expect(main.id).not.toBe(of('/v2')[0].id);
    expect(canary).not.toHaveProperty('balance');
    expect(canary?.url).toBe('http://10.0.0.9:8080');
  });

  it('bad balance is refused naming the field, and the other routes are programmed', () => {
    const bad = gatewayRoute('bad')
      .url('http://10.0.0.1:8080')
      .balance({ policy: 'round-robin' })
      .route('all', ['/bad'])
      .build();
    const r = build(resourceSetFrom([bad, hashed, ...cluster], { withServices: true }));
    expect(r.diagnostics).toEqual([
      expect.objectContaining({
        field: 'spec.service.balance',
        reason: 'Invalid',
        message: 'applies only with backendRef: spec.service.url has no endpoints to balance',
      }),
    ]);
    expect(r.snapshot.table.routes.map((x) => x.source.name)).toEqual(['web']);
  });
});

describe('outlier detection over the endpoints', () => {
  const svc = service('api', [{ name: 'http', port: 80 }]);
  const slices = [slice('api-x', 'api', [{ name: 'http', port: 9080 }], [at('10.0.0.7'), at('10.0.0.8')])];
  const withOutlier = (o: NonNullable<GatewayRoute['spec']['service']['outlierDetection']>) => {
    const obj = route('api', 80);
    obj.spec.service.outlierDetection = o;
    return obj;
  };

  it('becomes the upstream’s outlierDetection in ms, defaults filled in (5 failures, 30s, 300s, 50 %)', () => {
    const r = build(resourceSetFrom([withOutlier({}), svc, ...slices], { withServices: true }));
    expect(r.diagnostics).toEqual([]);
    expect(validateRouteTable(r.snapshot.table)).toEqual([]);
    expect(r.snapshot.table.upstreams[0].outlierDetection).toEqual({
      consecutiveFailures: 5,
      baseEjectionMs: 30_000,
      maxEjectionMs: 300_000,
      maxEjectionPercent: 50,
    });
    const set = withOutlier({
      consecutiveFailures: 3,
      baseEjectionTime: '2s',
      maxEjectionTime: '1m',
      maxEjectionPercent: 34,
    });
    const r2 = build(resourceSetFrom([set, svc, ...slices], { withServices: true }));
    expect(r2.snapshot.table.upstreams[0].outlierDetection).toEqual({
      consecutiveFailures: 3,
      baseEjectionMs: 2_000,
      maxEjectionMs: 60_000,
      maxEjectionPercent: 34,
    });
    expect(r2.snapshot.table.upstreams[0].id).not.toBe(r.snapshot.table.upstreams[0].id);
    // Without EndpointSlices the Service's name is dialled: nothing to eject, nothing in the table.
    const r3 = build(resourceSetFrom([set, svc], { withServices: true }));
    expect(r3.snapshot.table.upstreams[0]).not.toHaveProperty('outlierDetection');
  });

  it('is refused beside a url, and with maxEjectionTime under baseEjectionTime, naming the field', () => {
    const url = gatewayRoute('web').url('http://10.0.0.1:8080').route('all', ['/web']).build();
    url.spec.service.outlierDetection = {};
    const short = withOutlier({ baseEjectionTime: '1m', maxEjectionTime: '30s' });
    short.metadata.name = 'short';
    short.spec.routes[0].paths = ['/short'];
    const r = build(resourceSetFrom([url, short, svc, ...slices], { withServices: true }));
    expect(r.diagnostics.map((d) => [d.object.name, d.field, d.message])).toEqual([
      [
        'short',
        'spec.service.outlierDetection.maxEjectionTime',
        'must be at least baseEjectionTime (30000 ms < 60000 ms)',
      ],
      [
        'web',
        'spec.service.outlierDetection',
        'applies only with backendRef: spec.service.url has no endpoints to eject',
      ],
    ]);
    expect(r.snapshot.table.routes).toEqual([]);
  });
});
