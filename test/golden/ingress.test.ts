/**
 * Golden tests of the Ingress translation (controller/ingress/) through the whole pure pipeline:
 * every test/golden/ingress/<case>.in.yaml (objects as a cluster holds them, Services and
 * EndpointSlices included) is built with the default --ingress-class (sluice), and the YAML of
 * { hash, table, ingress (each of Sluice's Ingresses and what of it is reported), diagnostics }
 * must equal <case>.out.yaml. Every table must pass the data plane's validateRouteTable. To add
 * a case: as test/golden/compile.test.ts says (`make golden`).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import type { Resource } from '../../controller/api/index.ts';
import { build } from '../../controller/build.ts';
import { resourceSetFrom } from '../../controller/source/resource-set.ts';
import { validateRouteTable } from '../../dataplane/config/validate.ts';
import { expectGolden, toGoldenYaml } from '../helpers/golden.ts';

const DIR = join(import.meta.dirname, 'ingress');
const cases = readdirSync(DIR)
  .filter((f) => f.endsWith('.in.yaml'))
  .map((f) => f.slice(0, -'.in.yaml'.length))
  .sort();

function objects(name: string): Resource[] {
  return parseAllDocuments(readFileSync(join(DIR, `${name}.in.yaml`), 'utf8'))
    .map((d) => d.toJS() as Resource | null)
    .filter((o): o is Resource => o !== null);
}

describe('Ingress golden files', () => {
  it.each(cases)('%s', (name) => {
    const result = build(resourceSetFrom(objects(name), { withServices: true }));
    expect(validateRouteTable(result.snapshot.table)).toEqual([]);
    const out = {
      hash: result.snapshot.hash,
      table: result.snapshot.table,
      ingress: Object.fromEntries(result.ingress),
      diagnostics: result.diagnostics,
    };
    expectGolden(toGoldenYaml(out), join(DIR, `${name}.out.yaml`));
  });

  it('--ingress off: no Ingress is served or reported', () => {
    const result = build(resourceSetFrom(objects('classes'), { withServices: true }), { ingress: false });
    expect(result.snapshot.table.routes).toEqual([]);
    expect(result.ingress.size).toBe(0);
  });

  it('another --ingress-class: the Ingresses naming it, and those of IngressClasses of Sluice', () => {
    const result = build(resourceSetFrom(objects('classes'), { withServices: true }), { ingressClass: 'nginx' });
    // "nginx" by name (theirs, theirs-legacy) and "custom" (ours by its IngressClass; the default).
    expect([...result.ingress.keys()]).toEqual(['web/by-class', 'web/no-class', 'web/theirs', 'web/theirs-legacy']);
  });
});
