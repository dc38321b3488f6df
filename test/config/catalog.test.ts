/**
 * The catalog is the one list of plugins and handler kinds: every folder under
 * dataplane/plugins/ and dataplane/handlers/ has its line, every line has a manifest with a
 * schema, a phase (plugins), and an implementation in the data plane's registry (and the
 * registry nothing else), and everything derived from the list (the CRD's enum, the route
 * table's schema) says the same.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { TypeGuard } from '@sinclair/typebox';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { HANDLER_MANIFESTS, PLUGIN_MANIFESTS } from '../../dataplane/config/catalog.ts';
import { PHASES } from '../../dataplane/config/phases.ts';
import { Route } from '../../dataplane/config/route-table.ts';
import { HANDLERS, PLUGINS, pairUp } from '../../dataplane/runtime/registry.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const folders = (dir: string) =>
  readdirSync(join(ROOT, 'dataplane', dir), { withFileTypes: true })
    .filter((d) => d.isDirectory())
    .map((d) => d.name)
    .sort();

function crdPluginEnum(file: string): string[] {
  const crd = parse(readFileSync(join(ROOT, file), 'utf8'));
  return crd.spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.plugin.enum;
}

describe('plugins', () => {
  it('every folder under dataplane/plugins/ is a plugin of the catalog, named after its folder', () => {
    expect(PLUGIN_MANIFESTS.map((m) => m.name).sort()).toEqual(folders('plugins'));
  });

  it.each(PLUGIN_MANIFESTS.map((m) => [m.name, m] as const))(
    '%s has a schema, a phase and an implementation from its own folder',
    async (name, m) => {
      expect(TypeGuard.IsObject(m.schema)).toBe(true);
      expect(PHASES).toContain(m.phase);
      const own = (await import(`../../dataplane/plugins/${name}/index.ts`)).default;
      expect(typeof own.create).toBe('function');
      expect(PLUGINS.get(name)?.manifest).toBe(m);
      expect(PLUGINS.get(name)?.plugin).toBe(own);
    },
  );

  it('the registry holds an implementation for each catalog plugin and nothing else', () => {
    expect([...PLUGINS.keys()]).toEqual(PLUGIN_MANIFESTS.map((m) => m.name));
  });

  it('the CRDs list exactly the catalog plugins', () => {
    const names = PLUGIN_MANIFESTS.map((m) => m.name);
    expect(crdPluginEnum('crds/sluice.dev_gatewayplugins.yaml')).toEqual(names);
    expect(crdPluginEnum('charts/sluice/crds/sluice.dev_gatewayplugins.yaml')).toEqual(names);
  });
});

describe('handlers', () => {
  it('every folder under dataplane/handlers/ is a handler kind of the catalog', () => {
    expect(HANDLER_MANIFESTS.map((m) => m.kind).sort()).toEqual(folders('handlers'));
  });

  it.each(HANDLER_MANIFESTS.map((m) => [m.kind, m] as const))(
    '%s has a schema the route table takes, and an implementation from its own folder',
    async (kind, m) => {
      expect(m.schema.properties.type.const).toBe(kind);
      // A union of one kind is that kind's schema itself.
      const handler = Route.properties.handler as { anyOf?: unknown[] };
      expect(handler.anyOf ?? [handler]).toContain(m.schema);
      const own = (await import(`../../dataplane/handlers/${kind}/index.ts`)).default;
      expect(typeof own.create).toBe('function');
      expect(HANDLERS.get(kind)?.manifest).toBe(m);
      expect(HANDLERS.get(kind)?.handler).toBe(own);
    },
  );

  it('the registry holds an implementation for each catalog kind and nothing else', () => {
    expect([...HANDLERS.keys()]).toEqual(HANDLER_MANIFESTS.map((m) => m.kind));
  });
});

describe("the registry's pairing", () => {
  const manifests = [{ name: 'a' }, { name: 'b' }];
  const nameOf = (m: { name: string }) => m.name;

  it('pairs each manifest with its code, in the catalog order', () => {
    expect([...pairUp(manifests, nameOf, { b: 2, a: 1 })]).toEqual([
      ['a', { manifest: manifests[0], code: 1 }],
      ['b', { manifest: manifests[1], code: 2 }],
    ]);
  });

  it('refuses a manifest without an implementation, and an implementation without a manifest', () => {
    expect(() => pairUp(manifests, nameOf, { a: 1 })).toThrow(
      'no implementation for [b], no manifest for []',
    );
    expect(() => pairUp(manifests, nameOf, { a: 1, b: 2, c: 3 })).toThrow('no manifest for [c]');
  });
});
