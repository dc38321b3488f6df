/**
 * Golden tests of the Gateway API translation (controller/gateway-api/) through the whole pure
 * pipeline: every test/golden/gateway-api/<case>.in.yaml (objects as a cluster holds them,
 * Services and EndpointSlices included) is built, and the YAML of { hash, table, gatewayApi
 * (the status of each GatewayClass, Gateway and HTTPRoute Sluice serves, and each Gateway's
 * Service), diagnostics } must equal <case>.out.yaml. Every table must pass the data plane's
 * validateRouteTable. To add a case: as test/golden/compile.test.ts says (`make golden`).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { build } from '../../controller/build.ts';
import { SUPPORTED_FEATURES } from '../../controller/gateway-api/features.ts';
import type { Resource } from '../../controller/api/index.ts';
import { resourceSetFrom } from '../../controller/source/resource-set.ts';
import { validateRouteTable } from '../../dataplane/config/validate.ts';
import { RouteMatcher } from '../../dataplane/runtime/router.ts';
import { expectGolden, toGoldenYaml } from '../helpers/golden.ts';
import { routeMatcherInput } from '../helpers/tables.ts';

const DIR = join(import.meta.dirname, 'gateway-api');
const cases = readdirSync(DIR)
  .filter((f) => f.endsWith('.in.yaml'))
  .map((f) => f.slice(0, -'.in.yaml'.length))
  .sort();

function run(name: string) {
  const text = readFileSync(join(DIR, `${name}.in.yaml`), 'utf8');
  const objects = parseAllDocuments(text)
    .map((d) => d.toJS() as Resource | null)
    .filter((o): o is Resource => o !== null);
  return build(resourceSetFrom(objects, { withServices: true }));
}

const plain = (m: Map<string, unknown>) => Object.fromEntries(m);

describe('Gateway API golden files', () => {
  it.each(cases)('%s', (name) => {
    const result = run(name);
    expect(validateRouteTable(result.snapshot.table)).toEqual([]);
    const { status, services } = result.gatewayApi;
    const out = {
      hash: result.snapshot.hash,
      table: result.snapshot.table,
      gatewayApi: {
        classes: plain(status.classes),
        gateways: plain(status.gateways),
        routes: plain(status.routes),
        ...(status.grpcRoutes.size && { grpcRoutes: plain(status.grpcRoutes) }),
        services,
      },
      diagnostics: result.diagnostics,
    };
    expectGolden(toGoldenYaml(out), join(DIR, `${name}.out.yaml`));
  });

  it('the same objects in another order give the same hash', () => {
    const text = readFileSync(join(DIR, 'listeners-and-hostnames.in.yaml'), 'utf8');
    const objects = parseAllDocuments(text).map((d) => d.toJS() as Resource);
    const forward = build(resourceSetFrom(objects, { withServices: true })).snapshot.hash;
    const backward = build(resourceSetFrom([...objects].reverse(), { withServices: true })).snapshot.hash;
    expect(backward).toBe(forward);
  });
});

describe('Gateway API hostname precedence, as the table routes requests', () => {
  // hostname-precedence.in.yaml: the host that matched ranks a route before its path does.
  const table = run('hostname-precedence').snapshot.table;
  const m = new RouteMatcher(table.routes.map((r) => routeMatcherInput(r, true)));
  const served = (host: string, path: string) => m.match(path, 'GET', host, {})?.entry.source.name ?? null;

  it('an exact host name outranks a wildcard one whatever the paths', () => {
    expect(served('foo.example.com', '/very/specific')).toBe('exact');
    expect(served('foo.example.com', '/very/specific/longer')).toBe('exact');
  });

  it('a wildcard host name outranks a route for any host', () => {
    expect(served('baz.example.com', '/very/specific/longer')).toBe('wildcard');
    expect(served('other.test', '/very/specific/longer')).toBe('anyhost');
    expect(served('other.test', '/very/specific')).toBeNull();
  });

  it('a route with two host names ranks by the one that matched', () => {
    expect(served('bar.example.com', '/multi')).toBe('multi');
    expect(served('bar.example.com', '/very/specific')).toBe('wildcard');
    expect(served('foo.example.com', '/multi')).toBe('exact');
    expect(served('baz.example.com', '/multi')).toBe('multi');
  });
});

describe('GatewayClass supportedFeatures', () => {
  it('are sorted by name, each once, within the field’s 64', () => {
    const names = [...SUPPORTED_FEATURES];
    expect(names).toEqual([...new Set(names)].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)));
    expect(names.length).toBeLessThanOrEqual(64);
  });

  it('a class Sluice cannot accept (parametersRef) lists none', () => {
    const objects = parseAllDocuments(`
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: { name: with-params, generation: 1 }
spec:
  controllerName: sluice.dev/gateway-controller
  parametersRef: { group: example.com, kind: Params, name: p }
`).map((d) => d.toJS() as Resource);
    const classes = build(resourceSetFrom(objects, { withServices: true })).gatewayApi.status.classes;
    expect(classes.get('with-params')?.supportedFeatures).toEqual([]);
  });
});
