/**
 * The generated CRDs against a real API server (from KUBECONFIG: kapi, kind or a cluster): they
 * install, every object in examples/ applies (a GatewayPlugin of every plugin among them), the
 * server itself refuses invalid objects with an error naming the field (`kubectl apply
 * --dry-run=server`, strict), `kubectl explain` documents the plugins' fields, and `kubectl get`
 * shows the status columns.
 *
 * To add a rejection case, add test/k8s/fixtures/invalid-<case>.yaml: one object without a
 * namespace, headed by `# expect: <text>` lines, each a piece of text the error must contain, and
 * `# field: <path>` lines, each a field the error must name (standalone mode must name the same:
 * test/controller/plugin-fields.test.ts reads these files too).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GatewayRouteSpec } from '../../controller/api/gateway-route.ts';
import { PLUGIN_NAMES } from '../../dataplane/config/catalog.ts';
import { OidcConfig } from '../../dataplane/plugins/oidc/manifest.ts';
import { deleteAll, kubectl, ok } from '../helpers/kubectl.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const FIXTURES = join(import.meta.dirname, 'fixtures');
// A fixed namespace, emptied first: re-runs are idempotent, and nothing waits on a namespace
// in Terminating (kapi never finishes deleting one).
const NS = 'sluice-test-crds';
const CRDS = ['crd/gatewayroutes.sluice.dev', 'crd/gatewayplugins.sluice.dev'];

/** The documents of a YAML file without metadata.namespace, so `-n` puts them in the test namespace. */
function withoutNamespace(file: string): { yaml: string; objects: Array<{ kind: string; name: string }> } {
  const docs = parseAllDocuments(readFileSync(file, 'utf8')).filter((d) => d.contents !== null);
  for (const d of docs) d.deleteIn(['metadata', 'namespace']);
  return {
    yaml: docs.map((d) => d.toString()).join('---\n'),
    objects: docs.map((d) => ({ kind: String(d.get('kind')), name: String(d.getIn(['metadata', 'name'])) })),
  };
}

const examples = readdirSync(join(ROOT, 'examples'))
  .filter((f) => /\.ya?ml$/.test(f))
  .map((f) => withoutNamespace(join(ROOT, 'examples', f)));
const exampleNames = (kind: string) =>
  examples.flatMap((e) => e.objects.filter((o) => o.kind === kind).map((o) => o.name)).sort();

const invalid = readdirSync(FIXTURES)
  .filter((f) => /^invalid-.*\.yaml$/.test(f))
  .sort()
  .map((f) => {
    const text = readFileSync(join(FIXTURES, f), 'utf8');
    const lines = (key: string) => [...text.matchAll(new RegExp(`^# ${key}: (.+)$`, 'gm'))].map((m) => m[1]);
    return { file: f, text, expected: lines('expect'), fields: lines('field') };
  });

describe('CRDs on a real API server', () => {
  beforeAll(async () => {
    if (!process.env.KUBECONFIG) throw new Error('KUBECONFIG must point at a cluster (kapi, kind...)');
    // Server-side apply: no last-applied annotation, whose size limit big CRDs outgrow.
    await ok(['apply', '--server-side', '--force-conflicts', '-f', join(ROOT, 'crds')]);
    await ok(['wait', '--for=condition=Established', '--timeout=30s', ...CRDS]);
    await ok(['apply', '-f', '-'], `apiVersion: v1\nkind: Namespace\nmetadata:\n  name: ${NS}\n`);
    await ok(['delete', 'gatewayroutes,gatewayplugins', '--all', '-n', NS, '--ignore-not-found']);
  });

  afterAll(async () => {
    if (process.env.KUBECONFIG) await deleteAll('gatewayroutes,gatewayplugins', NS).catch(() => '');
  });

  it('applies every object in examples/ and lists them by short name', async () => {
    for (const e of examples) await ok(['apply', '-n', NS, '--validate=strict', '-f', '-'], e.yaml);
    const names = async (res: string) =>
      (await ok(['get', res, '-n', NS, '-o', 'jsonpath={.items[*].metadata.name}']))
        .split(' ')
        .filter(Boolean)
        .sort();
    expect(await names('gwr')).toEqual(exampleNames('GatewayRoute'));
    expect(await names('gwp')).toEqual(exampleNames('GatewayPlugin'));
  });

  it('has, among the examples, a GatewayPlugin of every plugin, each in its typed field', () => {
    const plugins = examples.flatMap((e) =>
      parseAllDocuments(e.yaml)
        .map((d) => d.toJS() as { kind?: string; spec?: Record<string, unknown> })
        .filter((o) => o?.kind === 'GatewayPlugin'),
    );
    expect([...new Set(plugins.map((p) => p.spec?.plugin))].sort()).toEqual([...PLUGIN_NAMES].sort());
    for (const p of plugins) expect(p.spec, String(p.spec?.plugin)).not.toHaveProperty('config');
  });

  it('shows the printer columns, conditions read through the status subresource', async () => {
    const [route] = exampleNames('GatewayRoute');
    const now = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
    const cond = (type: string, status: string) => ({
      type,
      status,
      reason: 'Test',
      message: 'set by test/k8s/crds.test.ts',
      lastTransitionTime: now,
    });
    const patch = { status: { conditions: [cond('Accepted', 'True'), cond('Programmed', 'False')] } };
    await ok([
      'patch',
      'gwr',
      route,
      '-n',
      NS,
      '--subresource=status',
      '--type=merge',
      '-p',
      JSON.stringify(patch),
    ]);
    const [header, row] = (await ok(['get', 'gwr', route, '-n', NS])).trim().split('\n');
    expect(header.split(/\s+/)).toEqual(['NAME', 'SERVICE', 'URL', 'ACCEPTED', 'PROGRAMMED', 'AGE']);
    expect(row.split(/\s+/).slice(-3, -1)).toEqual(['True', 'False']); // from the end: URL may be empty
    const [plugin] = exampleNames('GatewayPlugin');
    const pluginStatus = { status: { ...patch.status, routes: 2 } };
    await ok([
      'patch',
      'gwp',
      plugin,
      '-n',
      NS,
      '--subresource=status',
      '--type=merge',
      '-p',
      JSON.stringify(pluginStatus),
    ]);
    const [pHeader, pRow] = (await ok(['get', 'gwp', plugin, '-n', NS])).trim().split('\n');
    expect(pHeader.split(/\s+/)).toEqual(['NAME', 'PLUGIN', 'ACCEPTED', 'PROGRAMMED', 'ROUTES', 'AGE']);
    expect(pRow.split(/\s+/).slice(0, -1)).toEqual([
      plugin,
      await ok(['get', 'gwp', plugin, '-n', NS, '-o', 'jsonpath={.spec.plugin}']),
      'True',
      'False',
      '2',
    ]);
  });

  it.each(invalid)('refuses $file naming the field', async ({ text, expected, fields }) => {
    expect(expected.length).toBeGreaterThan(0);
    // The server, not kubectl, must refuse it (strict: unknown fields are errors).
    const r = await kubectl(['apply', '-n', NS, '--dry-run=server', '--validate=strict', '-f', '-'], text);
    expect(r.code, r.stdout).not.toBe(0);
    for (const e of expected) expect(r.stderr).toContain(e);
    // The field itself, not one below it: "spec.cors:" or `unknown field "spec.cors"`.
    for (const f of fields) expect(r.stderr).toMatch(new RegExp(`${f.replace(/[.[\]]/g, '\\$&')}[:"]`));
  });

  it.each([
    ['gatewayroute.spec.service.url', GatewayRouteSpec.properties.service.properties.url.description!],
    // A plugin's field, from its manifest, two levels into its config.
    [
      'gatewayplugin.spec.oidc.introspection.cacheTtl',
      OidcConfig.properties.introspection.properties.cacheTtl.description!,
    ],
  ])('explains %s with its description', async (path, want) => {
    // OpenAPI publication can trail the Established condition: poll.
    let out = '';
    for (let i = 0; i < 50 && !out.replace(/\s+/g, ' ').includes(want); i++) {
      if (i > 0) await sleep(200);
      out = (await kubectl(['explain', path])).stdout;
    }
    expect(out.replace(/\s+/g, ' ')).toContain(want);
  });

  it('explains a plugin field of spec', async () => {
    const out = (await ok(['explain', 'gatewayplugin.spec'])).replace(/\s+/g, ' ');
    for (const field of ['plugin', 'rateLimiting', 'keyAuth', 'mtlsAuth', 'config'])
      expect(out).toContain(`${field} <`);
  });
});
