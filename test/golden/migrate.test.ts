/**
 * Golden tests of `sluice migrate`'s conversion (controller/api/migrate.ts): every
 * test/golden/migrate/<case>.in.yaml, migrated, must equal <case>.out.yaml; the result must mean
 * what the input meant with only the GatewayPlugins' `config` moved to their typed field; and
 * migrating again changes nothing.
 *
 * To add a case: write test/golden/migrate/<what-it-shows>.in.yaml (a comment at the top says
 * what), run `make golden`, read the .out.yaml, commit both.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { configField } from '../../controller/api/gateway-plugin.ts';
import { migratePlugins } from '../../controller/api/migrate.ts';
import { parseFiles } from '../../controller/source/file.ts';
import { expectGolden } from '../helpers/golden.ts';

const DIR = join(import.meta.dirname, 'migrate');
const cases = readdirSync(DIR)
  .filter((f) => f.endsWith('.in.yaml'))
  .map((f) => f.slice(0, -'.in.yaml'.length))
  .sort();

type Obj = { kind?: string; apiVersion?: string; items?: Obj[]; spec?: Record<string, unknown> };
const objects = (text: string) => parseAllDocuments(text).map((d) => d.toJS() as Obj);

/** The input as the migration should leave it, said in JavaScript rather than in YAML text. */
function moved(o: Obj): Obj {
  if (o?.kind === 'List') return { ...o, items: o.items?.map(moved) };
  if (o?.kind !== 'GatewayPlugin' || o.spec?.config === undefined) return o;
  const { config, ...spec } = o.spec;
  return { ...o, spec: { ...spec, [configField(String(spec.plugin))]: config } };
}

describe('migrate golden files', () => {
  it.each(cases)('%s', (name) => {
    const input = readFileSync(join(DIR, `${name}.in.yaml`), 'utf8');
    const r = migratePlugins(input);
    expect(r.problems).toEqual([]);
    expect(r.migrated.length).toBeGreaterThan(0);
    expectGolden(r.text, join(DIR, `${name}.out.yaml`));
    expect(objects(r.text)).toEqual(objects(input).map(moved));
    // Only lines holding a key changed, as many as objects were migrated.
    const [a, b] = [input.split('\n'), r.text.split('\n')];
    expect(b.length).toBe(a.length);
    expect(a.filter((line, i) => line !== b[i])).toHaveLength(r.migrated.length);
    expect(migratePlugins(r.text)).toEqual({ text: r.text, migrated: [], problems: [] });
  });

  it('compiles the migrated file to the same snapshot and conditions (messages name the new field)', async () => {
    const { build } = await import('../../controller/build.ts');
    const input = readFileSync(join(DIR, 'mixed-file.in.yaml'), 'utf8');
    const before = build(parseFiles([{ file: 'in.yaml', text: input }]).resources);
    const after = build(parseFiles([{ file: 'out.yaml', text: migratePlugins(input).text }]).resources);
    expect(after.snapshot.hash).toBe(before.snapshot.hash);
    const conditions = (s: typeof before.status) =>
      Object.entries(s).map(([k, v]) => [k, v.conditions.map((c) => [c.type, c.status, c.reason])]);
    expect(conditions(after.status)).toEqual(conditions(before.status));
    // The key-auth plugin's Secret is missing: the same problem, named where the config now is.
    const fields = (d: typeof before.diagnostics) => d.map((x) => x.field);
    expect(fields(before.diagnostics)).toContain('spec.config.consumers[0].secretKeyRef');
    expect(fields(after.diagnostics)).toEqual(
      fields(before.diagnostics).map((f) => f.replace('spec.config.', 'spec.keyAuth.')),
    );
  });

  it('leaves what it cannot rewrite as it was, naming the line and the object', () => {
    const text = `apiVersion: sluice.dev/v1alpha1
kind: GatewayPlugin
metadata: { name: unknown }
spec: { plugin: no-such-plugin, config: {} }
---
apiVersion: sluice.dev/v1alpha1
kind: GatewayPlugin
metadata: { name: both, namespace: shop }
spec:
  plugin: rate-limiting
  rateLimiting: { minute: 1 }
  config: { minute: 2 }
---
apiVersion: sluice.dev/v1alpha1
kind: GatewayPlugin
metadata: { name: fine }
spec: { plugin: jwt, config: { issuers: [] } }
---
kind: GatewayPlugin
spec: { plugin: jwt, config: [
`;
    const r = migratePlugins(text);
    expect(r.migrated).toEqual(['fine']);
    expect(r.problems).toMatchObject([
      { line: 4, message: expect.stringContaining('GatewayPlugin unknown: spec.plugin "no-such-plugin"') },
      { line: 12, message: expect.stringContaining('GatewayPlugin shop/both: has both spec.config and spec.rateLimiting') },
      { line: expect.any(Number), message: expect.stringMatching(/flow|end/i) },
    ]);
    expect(r.text).toBe(text.replace('{ plugin: jwt, config: { issuers', '{ plugin: jwt, jwt: { issuers'));
  });
});
