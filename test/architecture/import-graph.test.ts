/**
 * The dependency rules of ARCHITECTURE §2, checked over the real import graph (every import
 * and export-from of controller/, dataplane/ and bin/, type-only and dynamic ones included: a
 * layer is a design boundary, not only a load order):
 *
 *   1. controller/ imports nothing of the data plane but its contract, dataplane/config/.
 *   2. The contract (dataplane/config/ and the manifests of plugins and handlers, the lowest
 *      layer of layers.ts) imports only itself, statically or lazily: so the controller, and
 *      anything that reads the catalog, never loads runtime code. No exception.
 *   3. dataplane/ imports nothing of controller/ except standalone.ts (file mode).
 *   4. controller/{validate,compile,snapshot} and build.ts are pure: no I/O modules, no clock,
 *      no randomness, no environment.
 *   5. Inside the data plane the layers point one way (LAYERS, layers.ts): a file imports its
 *      own part or a lower layer; plugins (and handler kinds) never import each other.
 *   6. No cycle through value or dynamic imports anywhere, and none at all in the contract
 *      (type-only imports too: it is the one layer whose parts import each other freely).
 *      Elsewhere two files of one folder may name each other's types (mutually recursive
 *      types, such as the request context and the route it runs); rule 5 keeps even those
 *      from crossing layers.
 *   7. Every file of dataplane/ has its place in LAYERS, and every dynamic import names its
 *      module (a computed one could not be checked).
 *
 * A wrong import fails here with the file, the import and the rule it breaks.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { type Edge, edgesOf, filesUnder, ROOT } from './imports.ts';
import { type Place, placeOf } from './layers.ts';

const IMPURE =
  /^(node:(fs|fs\/promises|net|http|https|http2|child_process|dns|tls|os)|@kubernetes\/|ioredis|undici|pino)/;
const IMPURE_CODE = /\bprocess\.env\b|\bDate\.now\(|\bnew Date\(|\bMath\.random\(|\bperformance\.now\(/;

/** A file's place in LAYERS, for files of dataplane/ (the path as the graph holds it). */
const place = (f: string): Place | undefined =>
  f.startsWith('dataplane/') ? placeOf(f.slice('dataplane/'.length)) : undefined;
const isContract = (f: string) => place(f)?.layer === 0;
const folderOf = (f: string) => /^dataplane\/(plugins|handlers)\/([^/]+)\//.exec(f)?.[0];

/** Every broken rule of one edge, in words. */
function violations(e: Edge): string[] {
  const out: string[] = [];
  const say = (rule: string) => out.push(`${e.from} imports ${e.spec}: ${rule}`);
  const local = e.to.startsWith('controller/') || e.to.startsWith('dataplane/') || e.to.startsWith('bin/');
  if (
    e.from.startsWith('controller/') &&
    e.to.startsWith('dataplane/') &&
    !e.to.startsWith('dataplane/config/')
  )
    say('rule 1: controller/ may import only dataplane/config/ of the data plane');
  if (isContract(e.from) && local && !isContract(e.to)) say('rule 2: the contract imports only the contract');
  if (
    e.from.startsWith('dataplane/') &&
    e.to.startsWith('controller/') &&
    e.from !== 'dataplane/standalone.ts'
  )
    say('rule 3: only dataplane/standalone.ts may import controller/');
  if (/^controller\/(validate|compile|snapshot)\/|^controller\/build\.ts$/.test(e.from)) {
    if (IMPURE.test(e.spec)) say('rule 4: controller/{validate,compile,snapshot} are pure (no I/O modules)');
    if (
      local &&
      !e.typeOnly &&
      /^controller\/(source|publish|status|leader|runner|main)/.test(e.to) &&
      !e.to.startsWith('controller/source/resource-set.ts')
    )
      say('rule 4: the pure pipeline imports no I/O stage');
  }
  if (e.from.startsWith('dataplane/') && e.to.startsWith('dataplane/') && !isContract(e.from)) {
    const from = place(e.from);
    const to = place(e.to);
    if (from !== undefined && to !== undefined && from.part !== to.part && to.layer >= from.layer)
      say(`rule 5: ${from.part} (layer ${from.layer}) may not import ${to.part} (layer ${to.layer})`);
    const a = folderOf(e.from);
    const b = folderOf(e.to);
    if (a !== undefined && b !== undefined && a !== b)
      say('rule 5: plugins and handler kinds never import each other');
  }
  return out;
}

/** Files imported by each file (value, type-only and dynamic imports alike), local ones only. */
function importsOf(edges: readonly Edge[]): Map<string, string[]> {
  const next = new Map<string, string[]>();
  for (const e of edges) if (e.to.endsWith('.ts')) next.set(e.from, [...(next.get(e.from) ?? []), e.to]);
  return next;
}

/** Cycles of the graph (at least one while there is any), each as its list of files. */
function cycles(edges: readonly Edge[]): string[][] {
  const next = importsOf(edges);
  const found: string[][] = [];
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const visit = (f: string) => {
    state.set(f, 'open');
    stack.push(f);
    for (const t of next.get(f) ?? []) {
      if (state.get(t) === 'open') found.push([...stack.slice(stack.indexOf(t)), t]);
      else if (!state.has(t)) visit(t);
    }
    stack.pop();
    state.set(f, 'done');
  };
  for (const f of next.keys()) if (!state.has(f)) visit(f);
  return found;
}

/** Every file reachable from `roots` through any import. */
function reachable(edges: readonly Edge[], roots: readonly string[]): Set<string> {
  const next = importsOf(edges);
  const seen = new Set<string>();
  const visit = (f: string) => {
    if (seen.has(f)) return;
    seen.add(f);
    for (const t of next.get(f) ?? []) visit(t);
  };
  for (const r of roots) visit(r);
  return seen;
}

/** A dynamic import whose module is computed: no edge can be read from it. */
const COMPUTED_IMPORT = /\bimport\(\s*(?![\s'"])/;

const files = [...filesUnder('controller'), ...filesUnder('dataplane'), ...filesUnder('bin')];
const sources = new Map(files.map((f) => [f, readFileSync(join(ROOT, f), 'utf8')]));
const edges = files.flatMap((f) => edgesOf(f, sources.get(f)!));

describe('the import graph keeps the architecture', () => {
  it('reads the graph (sanity: the known edges are there)', () => {
    expect(files.length).toBeGreaterThan(100);
    expect(edges).toContainEqual(
      expect.objectContaining({
        from: 'dataplane/config/catalog.ts',
        to: 'dataplane/plugins/jwt/manifest.ts',
      }),
    );
    expect(edges).toContainEqual(
      expect.objectContaining({
        from: 'dataplane/runtime/registry.ts',
        to: 'dataplane/plugins/jwt/index.ts',
        dynamic: true,
      }),
    );
  });

  it('breaks none of the dependency rules', () => {
    expect(edges.flatMap((e) => violations(e))).toEqual([]);
  });

  it('controller/{validate,compile,snapshot} and build.ts use no clock, randomness or environment', () => {
    const impure = [...sources]
      .filter(([f]) => /^controller\/(validate|compile|snapshot)\/|^controller\/build\.ts$/.test(f))
      .filter(([, text]) => IMPURE_CODE.test(text))
      .map(([f]) => f);
    expect(impure).toEqual([]);
  });

  it('has no cycle through value or dynamic imports', () => {
    expect(cycles(edges.filter((e) => !e.typeOnly))).toEqual([]);
  });

  it('has no cycle in the contract, type-only imports included', () => {
    expect(cycles(edges.filter((e) => isContract(e.from) && isContract(e.to)))).toEqual([]);
  });

  it('places every file of dataplane/ in a layer', () => {
    expect(files.filter((f) => f.startsWith('dataplane/') && place(f) === undefined)).toEqual([]);
  });

  it('has no dynamic import of a computed module', () => {
    expect([...sources].filter(([, text]) => COMPUTED_IMPORT.test(text)).map(([f]) => f)).toEqual([]);
  });

  it('reaches no runtime code from controller/ or the contract', () => {
    const roots = files.filter((f) => f.startsWith('controller/') || isContract(f));
    const runtime = [...reachable(edges, roots)].filter((f) => f.startsWith('dataplane/') && !isContract(f));
    // standalone.ts is the data plane's side of file mode; nothing of controller/ imports it.
    expect(runtime).toEqual([]);
  });
});

describe('the checker itself', () => {
  const edge = (from: string, spec: string, text = `import { x } from '${spec}';`) => edgesOf(from, text)[0];

  it.each([
    ['controller/compile/index.ts', '../../dataplane/runtime/router.ts', 'rule 1'],
    ['controller/compile/index.ts', '../../dataplane/plugins/jwt/manifest.ts', 'rule 1'],
    ['dataplane/config/validate.ts', '../pipeline/context.ts', 'rule 2'],
    ['dataplane/config/catalog.ts', '../plugins/jwt/index.ts', 'rule 2'],
    ['dataplane/plugins/jwt/manifest.ts', '../../pipeline/answer.ts', 'rule 2'],
    ['dataplane/plugins/jwt/manifest.ts', './jwks.ts', 'rule 2'],
    ['dataplane/server/handle.ts', '../../controller/build.ts', 'rule 3'],
    ['controller/compile/index.ts', 'node:fs', 'rule 4'],
    ['dataplane/upstream/call.ts', '../pipeline/context.ts', 'rule 5'],
    ['dataplane/pipeline/run-chain.ts', '../server/finish.ts', 'rule 5'],
    ['dataplane/errors/codes.ts', '../observability/metrics.ts', 'rule 5'],
    ['dataplane/plugins/jwt/index.ts', '../key-auth/index.ts', 'rule 5'],
    ['dataplane/plugins/oidc/index.ts', '../jwt/manifest.ts', 'rule 5'],
    ['dataplane/plugins/jwt/index.ts', '../../handlers/proxy/index.ts', 'rule 5'],
  ])('refuses %s importing %s (%s)', (from, spec, rule) => {
    const e = edge(from, spec);
    expect(violations(e).join('\n')).toContain(rule);
  });

  it.each([
    ['dataplane/plugins/jwt/index.ts', '../../pipeline/answer.ts'],
    ['dataplane/plugins/jwt/index.ts', './jwks.ts'],
    ['dataplane/plugins/jwt/index.ts', './manifest.ts'],
    ['dataplane/handlers/proxy/index.ts', '../client-sink.ts'],
    ['controller/validate/index.ts', '../../dataplane/config/catalog.ts'],
    ['dataplane/config/catalog.ts', '../plugins/jwt/manifest.ts'],
    ['dataplane/plugins/oidc/manifest.ts', '../jwt/manifest.ts'],
    ['dataplane/plugins/jwt/manifest.ts', '../../config/duration.ts'],
    ['dataplane/runtime/registry.ts', '../plugins/jwt/index.ts'],
  ])('allows %s importing %s', (from, spec) => {
    expect(violations(edge(from, spec))).toEqual([]);
  });

  it("refuses a manifest's lazy load of its runtime, and any upward dynamic import", () => {
    const own = edgesOf('dataplane/plugins/jwt/manifest.ts', "load: () => import('./index.ts'),")[0];
    const upward = edgesOf('dataplane/pipeline/run-chain.ts', "await import('../runtime/holder.ts');")[0];
    expect(violations(own).join()).toContain('rule 2');
    expect(violations(upward).join()).toContain('rule 5');
  });

  it('finds a cycle through value, type-only and dynamic imports alike', () => {
    const a = edgesOf('dataplane/pipeline/a.ts', "import { b } from './b.ts';");
    const b = edgesOf('dataplane/pipeline/b.ts', "import { a } from './a.ts';");
    const bType = edgesOf('dataplane/pipeline/b.ts', "import type { A } from './a.ts';");
    const bLazy = edgesOf('dataplane/pipeline/b.ts', "const a = () => import('./a.ts');");
    const c = edgesOf('dataplane/pipeline/c.ts', "import { a } from './a.ts';");
    expect(cycles([...a, ...b])).toHaveLength(1);
    expect(cycles([...a, ...bType])).toHaveLength(1);
    expect(cycles([...a, ...bLazy])).toHaveLength(1);
    expect(cycles([...a, ...c])).toEqual([]);
  });

  it('finds what a root reaches', () => {
    const g = [
      ...edgesOf('controller/x.ts', "import { c } from '../dataplane/config/c.ts';"),
      ...edgesOf('dataplane/config/c.ts', "export type { P } from '../plugins/p/index.ts';"),
    ];
    expect([...reachable(g, ['controller/x.ts'])]).toEqual([
      'controller/x.ts',
      'dataplane/config/c.ts',
      'dataplane/plugins/p/index.ts',
    ]);
  });

  it('spots a computed dynamic import, not a named one', () => {
    expect(COMPUTED_IMPORT.test('await import(name)')).toBe(true);
    expect(COMPUTED_IMPORT.test('await import( `./plugins/` + name)')).toBe(true);
    expect(COMPUTED_IMPORT.test("await import('./a.ts')")).toBe(false);
    expect(COMPUTED_IMPORT.test("type M = typeof import( 'undici');")).toBe(false);
  });
});
