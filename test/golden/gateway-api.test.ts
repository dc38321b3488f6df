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
import type { Resource } from '../../controller/api/index.ts';
import { resourceSetFrom } from '../../controller/source/resource-set.ts';
import { validateRouteTable } from '../../dataplane/config/validate.ts';
import { expectGolden, toGoldenYaml } from '../helpers/golden.ts';

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
