/**
 * Standalone mode (files → validate, as `sluice run` and `sluice validate` read them) checks a
 * GatewayPlugin's typed field with the schema the CRD has, naming the same fields the API server
 * names: every test/k8s/fixtures/invalid-plugin-*.yaml lists them in `# field:` lines, and
 * test/k8s/crds.test.ts checks the same lines against a real API server. The examples (one
 * GatewayPlugin of every plugin) load without a problem, and the deprecated untyped `config`
 * still loads, compiling to the same snapshot as its migrated form.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PLUGIN_FIELDS } from '../../controller/api/gateway-plugin.ts';
import { loadConfig } from '../../dataplane/standalone.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const FIXTURES = join(ROOT, 'test', 'k8s', 'fixtures');
const cases = readdirSync(FIXTURES)
  .filter((f) => /^invalid-plugin-.*\.yaml$/.test(f))
  .sort()
  .map((file) => ({
    file,
    fields: [...readFileSync(join(FIXTURES, file), 'utf8').matchAll(/^# field: (.+)$/gm)].map((m) => m[1]),
  }));

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sluice-plugin-fields-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('GatewayPlugin fields in standalone mode', () => {
  it('has cases', () => {
    expect(cases.length).toBeGreaterThanOrEqual(10);
  });

  it.each(cases)('refuses $file naming the fields the API server names', async ({ file, fields }) => {
    expect(fields.length).toBeGreaterThan(0);
    const { problems } = await loadConfig([join(FIXTURES, file)]);
    const named = problems.map((p) => p.field);
    for (const f of fields) expect(named, `${file}: ${JSON.stringify(problems)}`).toContain(f);
    // Nothing but the object itself is at fault, and only through the fields the server names.
    for (const p of problems) expect(p.where).toContain(`GatewayPlugin default/${file.slice(0, -5)}`);
  });

  it('loads the examples, a GatewayPlugin of every plugin among them, without a problem', async () => {
    const { problems } = await loadConfig([join(ROOT, 'examples')]);
    expect(problems).toEqual([]);
    const text = readFileSync(join(ROOT, 'examples', 'plugins.yaml'), 'utf8');
    for (const { plugin, field } of PLUGIN_FIELDS) expect(text).toContain(`plugin: ${plugin}\n  ${field}:`);
  });

  it('loads the deprecated config as its typed field: same snapshot, errors under spec.config', async () => {
    const doc = (field: string, minute: unknown) => `apiVersion: sluice.dev/v1alpha1
kind: GatewayPlugin
metadata: { name: limit }
spec:
  plugin: rate-limiting
  ${field}: { minute: ${JSON.stringify(minute)} }
---
apiVersion: sluice.dev/v1alpha1
kind: GatewayRoute
metadata: { name: orders }
spec:
  service: { name: orders, url: http://orders.shop }
  plugins: [{ name: limit }]
  routes: [{ name: all, paths: ["/orders"] }]
`;
    const load = async (name: string, text: string) => {
      await writeFile(join(dir, name), text);
      return loadConfig([join(dir, name)]);
    };
    const typed = await load('typed.yaml', doc('rateLimiting', 100));
    const old = await load('old.yaml', doc('config', 100));
    expect(typed.problems).toEqual([]);
    expect(old.problems).toEqual([]);
    // A note (stderr of sluice run / validate), not a problem.
    expect(typed.notes).toEqual([]);
    expect(old.notes).toMatchObject([
      {
        field: 'spec.config',
        message: expect.stringContaining('`sluice migrate -f FILE` moves it to spec.rateLimiting'),
      },
    ]);
    expect(old.snapshot.hash).toBe(typed.snapshot.hash);
    expect(typed.snapshot.table.routes[0].plugins.map((p) => p.config)).toEqual([{ minute: 100 }]);

    const bad = await load('bad.yaml', doc('config', 'many'));
    expect(bad.problems.map((p) => [p.field, p.message])).toContainEqual([
      'spec.config.minute',
      'rate-limiting: Expected integer (got "many")',
    ]);
    const badTyped = await load('bad-typed.yaml', doc('rateLimiting', 'many'));
    expect(badTyped.problems.map((p) => [p.field, p.message])).toContainEqual([
      'spec.rateLimiting.minute',
      'Expected integer (got "many")',
    ]);
  });
});
