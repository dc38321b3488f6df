import { describe, expect, it } from 'vitest';
import type { Resource } from '../../controller/api/index.ts';
import { build } from '../../controller/build.ts';
import { loadFiles } from '../../controller/source/file.ts';
import { resourceSetFrom } from '../../controller/source/resource-set.ts';
import { validateRouteTable } from '../../dataplane/config/validate.ts';
import { addHeaders, gatewayRoute } from '../helpers/fixtures.ts';

const objects: Resource[] = [
  addHeaders('version', ['X-Gateway-Version:v1']),
  addHeaders('beta', ['X-Beta:1'], 'shop'),
  gatewayRoute('charges')
    .url('http://charges.apps/v1')
    .plugins('version')
    .route('charges', ['/charges'], { methods: ['POST'] })
    .build(),
  gatewayRoute('charges-read')
    .url('http://charges.apps/v1')
    .route('charges', ['/charges'])
    .created('2024-01-01T00:00:00Z')
    .build(),
  gatewayRoute('cart', 'shop')
    .backendRef('cart', 8080)
    .route('cart', ['/cart', '/basket'], { plugins: [{ name: 'beta' }] })
    .build(),
  gatewayRoute('root', 'shop').url('http://root.apps').route('root', ['/']).build(),
  gatewayRoute('missing', 'shop').url('http://m.apps').plugins('nope').route('m', ['/m']).build(),
];

function permutations<T>(list: T[]): T[][] {
  if (list.length <= 1) return [list];
  return list.flatMap((x, i) =>
    permutations([...list.slice(0, i), ...list.slice(i + 1)]).map((p) => [x, ...p]),
  );
}

describe('build', () => {
  it('gives the same snapshot and status for any input order', () => {
    const reference = build(resourceSetFrom(objects));
    expect(validateRouteTable(reference.snapshot.table)).toEqual([]);
    expect(reference.snapshot.table.routes.length).toBe(5);
    for (const order of permutations(objects)) {
      const result = build(resourceSetFrom(order));
      expect(result.snapshot.hash).toBe(reference.snapshot.hash);
      expect(result.status).toEqual(reference.status);
      expect(result.diagnostics).toEqual(reference.diagnostics);
    }
  });

  it('is pure: building twice gives equal results and leaves the input untouched', () => {
    const input = structuredClone(objects);
    const set = resourceSetFrom(input);
    expect(build(set)).toEqual(build(set));
    expect(input).toEqual(objects);
  });

  it('never throws on malformed objects, and reports each on itself', () => {
    const junk = [
      { apiVersion: 'sluice.dev/v1alpha1', kind: 'GatewayRoute', metadata: { name: 'a' } },
      { apiVersion: 'sluice.dev/v1alpha1', kind: 'GatewayRoute', metadata: { name: 'b' }, spec: null },
      {
        apiVersion: 'sluice.dev/v1alpha1',
        kind: 'GatewayRoute',
        metadata: { name: 'c' },
        spec: { routes: 'x', plugins: [null, 5] },
      },
      {
        apiVersion: 'sluice.dev/v1alpha1',
        kind: 'GatewayRoute',
        metadata: { name: 'd', generation: -1 },
        spec: [],
      },
      {
        apiVersion: 'sluice.dev/v1alpha1',
        kind: 'GatewayPlugin',
        metadata: { name: 'e' },
        spec: { plugin: 'request-transformer', requestTransformer: null },
      },
      {
        apiVersion: 'sluice.dev/v1alpha1',
        kind: 'GatewayPlugin',
        metadata: { name: 'f' },
        spec: { plugin: 5 },
      },
    ] as unknown as Resource[];
    const result = build(resourceSetFrom([...junk, ...objects]));
    expect(validateRouteTable(result.snapshot.table)).toEqual([]);
    expect(result.snapshot.table.routes.length).toBe(5);
    for (const key of [
      'GatewayRoute/default/a',
      'GatewayRoute/default/b',
      'GatewayRoute/default/c',
      'GatewayRoute/default/d',
      'GatewayPlugin/default/e',
      'GatewayPlugin/default/f',
    ])
      expect(result.status[key].conditions[0]).toMatchObject({
        type: 'Accepted',
        status: 'False',
        reason: 'Invalid',
      });
  });

  it('leaves out a route whose plugin is missing and says so in its status', () => {
    const { snapshot, status } = build(resourceSetFrom(objects));
    expect(snapshot.table.routes.some((r) => r.source.name === 'missing')).toBe(false);
    expect(status['GatewayRoute/shop/missing'].conditions).toMatchObject([
      { type: 'Accepted', status: 'True' },
      {
        type: 'ResolvedRefs',
        status: 'False',
        reason: 'PluginNotFound',
        message: 'spec.plugins[0].name: GatewayPlugin shop/nope not found',
      },
    ]);
  });

  it('compiles examples/gateway.yaml into a valid table', async () => {
    const loaded = await loadFiles(['examples/gateway.yaml']);
    expect(loaded.diagnostics).toEqual([]);
    const { snapshot, diagnostics } = build(loaded.resources);
    expect(diagnostics).toEqual([]);
    expect(validateRouteTable(snapshot.table)).toEqual([]);
    expect(snapshot.table.routes.map((r) => r.id)).toEqual([
      'route/default/user-profile/user-profile/0',
      'route/default/preferences/preferences/0',
      'route/default/orders-soap/create-order/0',
      'route/default/catalog/create-item/0',
      'route/default/catalog/get-item/0',
      'route/default/charges/charges/0',
      'route/default/orders/orders/0',
      'route/default/users/users/0',
    ]);
  });
});
