/**
 * crds/ and charts/sluice/crds/ hold exactly what renderCrds() makes of controller/api, and
 * what it makes is a structural schema the API server takes. After changing controller/api,
 * run `make crds`. (test/k8s/crds.test.ts checks the same files against a real API server.)
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Type } from '@sinclair/typebox';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { CRD_DIRS, renderCrds, toStructural } from '../../controller/api/crds.ts';
import { configField } from '../../controller/api/gateway-plugin.ts';
import { PLUGIN_MANIFESTS, PLUGIN_NAMES } from '../../dataplane/config/catalog.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const files = renderCrds();

type Node = { [key: string]: unknown };

/** Every schema node under `node`, with its path. */
function* walk(node: Node, at: string): Generator<[string, Node]> {
  yield [at, node];
  for (const [name, child] of Object.entries((node.properties ?? {}) as Record<string, Node>)) {
    yield* walk(child, `${at}.${name}`);
  }
  if (node.items) yield* walk(node.items as Node, `${at}[*]`);
  if (typeof node.additionalProperties === 'object')
    yield* walk(node.additionalProperties as Node, `${at}.*`);
}

function schemaOf(plural: string): Node {
  const crd = parse(files[`crds/sluice.dev_${plural}.yaml`]);
  return crd.spec.versions[0].schema.openAPIV3Schema;
}

describe('generated CRDs', () => {
  it.each(Object.keys(files))('%s is up to date', (rel) => {
    const path = join(ROOT, rel);
    const onDisk = existsSync(path) ? readFileSync(path, 'utf8') : undefined;
    expect(onDisk === files[rel], `${rel} is missing or stale: run \`make crds\``).toBe(true);
  });

  it.each(CRD_DIRS)('%s holds no CRD that renderCrds() does not make', (dir) => {
    const extra = readdirSync(join(ROOT, dir)).filter(
      (f) => f.endsWith('.yaml') && !(`${dir}/${f}` in files),
    );
    expect(extra, `stale files in ${dir}: run \`make crds\``).toEqual([]);
  });

  it('charts/sluice/crds/ is identical to crds/ (helm installs the former, kubectl users apply the latter)', () => {
    const names = (dir: string) =>
      readdirSync(join(ROOT, dir))
        .filter((f) => f.endsWith('.yaml'))
        .sort();
    expect(names('charts/sluice/crds')).toEqual(names('crds'));
    for (const f of names('crds'))
      expect(
        readFileSync(join(ROOT, 'charts/sluice/crds', f), 'utf8') ===
          readFileSync(join(ROOT, 'crds', f), 'utf8'),
        f,
      ).toBe(true);
  });

  it('is deterministic', () => {
    expect(renderCrds()).toEqual(files);
  });

  it.each(['gatewayroutes', 'gatewayplugins'])('%s: a described, structural schema', (plural) => {
    for (const [at, node] of walk(schemaOf(plural), '')) {
      // metadata is the one exception: the API server forbids describing it (it is ObjectMeta).
      if (at !== '.metadata') expect(node.description, `${at} has no description`).toBeTruthy();
      expect(node.type, `${at} has no type`).toBeTypeOf('string');
      expect(node.additionalProperties, `${at}: additionalProperties: false`).not.toBe(false);
      for (const key of ['anyOf', 'oneOf', 'allOf', 'const', '$id', '$ref']) {
        expect(node, `${at} has ${key}`).not.toHaveProperty(key);
      }
    }
  });

  it('enumerates the built-in plugins on spec.plugin', () => {
    const spec = schemaOf('gatewayplugins').properties as Record<string, Node>;
    const plugin = (spec.spec.properties as Record<string, Node>).plugin;
    expect(plugin).toMatchObject({ type: 'string', enum: PLUGIN_NAMES });
  });

  it("types each plugin's field with its manifest's schema (one source for the CRD, the controller and the data plane)", () => {
    const spec = (schemaOf('gatewayplugins').properties as Record<string, Node>).spec;
    const fields = spec.properties as Record<string, Node>;
    for (const m of PLUGIN_MANIFESTS) {
      const { description, ...field } = fields[configField(m.name)];
      const { description: own, ...schema } = toStructural(m.schema, m.name);
      expect(field, m.name).toEqual(schema);
      expect(description, m.name).toContain(`Configuration of the ${m.name} plugin.`);
      if (own) expect(description, m.name).toContain(own as string);
    }
  });

  it.each(Object.keys(files))('%s stays well under what client-side apply can annotate (256 KiB)', (rel) => {
    // `kubectl apply` without --server-side copies the whole object into an annotation, and
    // annotations are limited to 256 KiB in all: half of that leaves room to grow.
    expect(JSON.stringify(parse(files[rel])).length).toBeLessThan(128 * 1024);
  });

  it('turns unions of literals into enums and refuses what a CRD cannot say', () => {
    const union = Type.Union([Type.Literal('a'), Type.Literal('b')], { description: 'd' });
    expect(toStructural(union, 'x')).toEqual({ type: 'string', enum: ['a', 'b'], description: 'd' });
    expect(() => toStructural(Type.Union([Type.String(), Type.Integer()]), 'x')).toThrow(/x: only unions/);
    expect(() => toStructural(Type.Number({ exclusiveMinimum: 0 }), 'x')).toThrow(/exclusiveMinimum/);
    expect(toStructural(Type.Array(Type.String(), { uniqueItems: true }), 'x')).toEqual({
      type: 'array',
      items: { type: 'string' },
      'x-kubernetes-list-type': 'set',
    });
    expect(() => toStructural(Type.Array(Type.Object({}), { uniqueItems: true }), 'x')).toThrow(
      /x: "uniqueItems" of objects/,
    );
  });
});
