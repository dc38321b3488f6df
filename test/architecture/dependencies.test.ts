/**
 * package.json against the code the package ships (bin/, controller/, dataplane/: what
 * tsconfig.build.json compiles): every package a runtime file imports is in `dependencies`
 * (a transitive one happens to be installed today and vanishes with the next lock), and every
 * entry of `dependencies` is imported by that code (an unused one only costs the image).
 * Type-only imports are erased by the compiler: they may name devDependencies.
 */
import { readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { type Edge, edgesOf, filesUnder, ROOT } from './imports.ts';

const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
};
const RUNTIME = ['bin', 'controller', 'dataplane'];
const edges = RUNTIME.flatMap(filesUnder).flatMap((f) => edgesOf(f, readFileSync(join(ROOT, f), 'utf8')));

/** The package a bare specifier names ('@scope/name/sub' → '@scope/name'); undefined for files and builtins. */
function packageOf(spec: string): string | undefined {
  if (spec.startsWith('.') || spec.startsWith('node:') || builtinModules.includes(spec)) return undefined;
  const parts = spec.split('/');
  return spec.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
}

function undeclared(all: Edge[], declared: Record<string, string>, dev: Record<string, string>): string[] {
  return all.flatMap((e) => {
    const name = packageOf(e.spec);
    if (name === undefined || name in declared || (e.typeOnly && name in dev)) return [];
    return [`${e.from} imports ${e.spec}: ${name} is not in dependencies`];
  });
}

describe('dependencies', () => {
  it('reads the runtime imports (the check sees the packages)', () => {
    const names = new Set(edges.map((e) => packageOf(e.spec)));
    expect(names).toContain('fastify');
    expect(names).toContain('protobufjs');
  });

  it('every package runtime code imports is declared in dependencies', () => {
    expect(undeclared(edges, pkg.dependencies, pkg.devDependencies)).toEqual([]);
  });

  it('the check finds an undeclared import', () => {
    const { protobufjs: _, ...without } = pkg.dependencies;
    expect(undeclared(edges, without, pkg.devDependencies).length).toBeGreaterThan(0);
  });

  it('every dependency is imported (as a value) by runtime code', () => {
    const used = new Set(edges.filter((e) => !e.typeOnly).map((e) => packageOf(e.spec)));
    expect(Object.keys(pkg.dependencies).filter((d) => !used.has(d))).toEqual([]);
  });
});
