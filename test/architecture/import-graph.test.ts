/**
 * The dependency rules of ARCHITECTURE §2, checked over the real import graph (every import
 * and export-from of controller/, dataplane/ and bin/, type-only ones included: a layer is a
 * design boundary, not only a load order):
 *
 *   1. controller/ imports nothing of the data plane but its contract, dataplane/config/.
 *   2. The contract (dataplane/config/ and the manifests of plugins and handlers) imports only
 *      itself: the controller never loads runtime code. A manifest's lazy `load` of its own
 *      folder's index.ts is the one dynamic import allowed.
 *   3. dataplane/ imports nothing of controller/ except standalone.ts (file mode).
 *   4. controller/{validate,compile,snapshot} and build.ts are pure: no I/O modules, no clock,
 *      no randomness, no environment.
 *   5. Inside the data plane the layers point one way (LAYERS below): a file imports its own
 *      folder or a lower layer; plugins (and handler kinds) never import each other.
 *   6. No cycle through value imports anywhere.
 *
 * A wrong import fails here with the file, the import and the rule it breaks.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..', '..');

/** Lower layers first; a file may import its own top folder or any lower layer. */
const LAYERS: Record<string, number> = {
  config: 0,
  errors: 1,
  observability: 1,
  stores: 2,
  upstream: 3,
  pipeline: 4,
  plugins: 5,
  handlers: 5,
  runtime: 6,
  state: 7,
  server: 7,
  'main.ts': 8,
  'standalone.ts': 8,
  // Composition of several data planes (--workers N): a primary and its workers, each a main.ts.
  cluster: 9,
};

const IMPURE =
  /^(node:(fs|fs\/promises|net|http|https|http2|child_process|dns|tls|os)|@kubernetes\/|ioredis|undici|pino)/;
const IMPURE_CODE = /\bprocess\.env\b|\bDate\.now\(|\bnew Date\(|\bMath\.random\(|\bperformance\.now\(/;

interface Edge {
  from: string;
  to: string;
  /** The specifier as written. */
  spec: string;
  typeOnly: boolean;
  dynamic: boolean;
}

function filesUnder(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { recursive: true, withFileTypes: true })
    .filter((d) => d.isFile() && d.name.endsWith('.ts'))
    .map((d) => relative(ROOT, join(d.parentPath, d.name)));
}

const STATIC = /^\s*(import|export)\s+(type\s+)?(?:[^'";]*?\sfrom\s+)?['"]([^'"]+)['"]/gm;
const DYNAMIC = /\bimport\(\s*['"]([^'"]+)['"]\s*\)/g;

function edgesOf(file: string, text: string): Edge[] {
  const edges: Edge[] = [];
  const to = (spec: string) =>
    spec.startsWith('.') ? relative(ROOT, resolve(ROOT, dirname(file), spec)) : spec;
  for (const m of text.matchAll(STATIC))
    edges.push({ from: file, to: to(m[3]), spec: m[3], typeOnly: m[2] !== undefined, dynamic: false });
  for (const m of text.matchAll(DYNAMIC))
    edges.push({ from: file, to: to(m[1]), spec: m[1], typeOnly: false, dynamic: true });
  return edges;
}

const isManifest = (f: string) => /^dataplane\/(plugins|handlers)\/[^/]+\/manifest\.ts$/.test(f);
const isContract = (f: string) => f.startsWith('dataplane/config/') || isManifest(f);
const folderOf = (f: string) => /^dataplane\/(plugins|handlers)\/([^/]+)\//.exec(f)?.[0];

function layerOf(f: string): number | undefined {
  if (isContract(f)) return 0;
  const top = f.split('/')[1];
  return LAYERS[top];
}

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
  if (isContract(e.from) && local && !isContract(e.to)) {
    const lazyOwnRuntime = e.dynamic && isManifest(e.from) && e.to === `${dirname(e.from)}/index.ts`;
    if (!lazyOwnRuntime) say('rule 2: the contract imports only the contract');
  }
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
    const from = layerOf(e.from);
    const to = layerOf(e.to);
    const sameTop = e.from.split('/')[1] === e.to.split('/')[1];
    if (from !== undefined && to !== undefined && !sameTop && to >= from)
      say(
        `rule 5: layer ${e.from.split('/')[1]} (${from}) may not import layer ${e.to.split('/')[1]} (${to})`,
      );
    const a = folderOf(e.from);
    const b = folderOf(e.to);
    if (a !== undefined && b !== undefined && a !== b)
      say('rule 5: plugins and handler kinds never import each other');
  }
  return out;
}

/** Cycles through value (non type-only) imports, each as its list of files. */
function cycles(edges: Edge[]): string[][] {
  const next = new Map<string, string[]>();
  for (const e of edges)
    if (!e.typeOnly && !e.dynamic && e.to.endsWith('.ts'))
      next.set(e.from, [...(next.get(e.from) ?? []), e.to]);
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

  it('has no cycle through value imports', () => {
    expect(cycles(edges)).toEqual([]);
  });
});

describe('the checker itself', () => {
  const edge = (from: string, spec: string, text = `import { x } from '${spec}';`) => edgesOf(from, text)[0];

  it.each([
    ['controller/compile/index.ts', '../../dataplane/runtime/router.ts', 'rule 1'],
    ['dataplane/config/validate.ts', '../pipeline/context.ts', 'rule 2'],
    ['dataplane/plugins/jwt/manifest.ts', '../../pipeline/answer.ts', 'rule 2'],
    ['dataplane/server/handle.ts', '../../controller/build.ts', 'rule 3'],
    ['controller/compile/index.ts', 'node:fs', 'rule 4'],
    ['dataplane/upstream/call.ts', '../pipeline/context.ts', 'rule 5'],
    ['dataplane/pipeline/run-chain.ts', '../server/finish.ts', 'rule 5'],
    ['dataplane/plugins/jwt/index.ts', '../key-auth/index.ts', 'rule 5'],
    ['dataplane/plugins/jwt/index.ts', '../../handlers/proxy/index.ts', 'rule 5'],
  ])('refuses %s importing %s (%s)', (from, spec, rule) => {
    const e = edge(from, spec);
    expect(violations(e).join('\n')).toContain(rule);
  });

  it.each([
    ['dataplane/plugins/jwt/index.ts', '../../pipeline/answer.ts'],
    ['dataplane/plugins/jwt/index.ts', './jwks.ts'],
    ['dataplane/handlers/proxy/index.ts', '../client-sink.ts'],
    ['controller/validate/index.ts', '../../dataplane/config/catalog.ts'],
    ['dataplane/config/catalog.ts', '../plugins/jwt/manifest.ts'],
  ])('allows %s importing %s', (from, spec) => {
    expect(violations(edge(from, spec))).toEqual([]);
  });

  it("allows a manifest's lazy load of its own runtime, and no other dynamic import from the contract", () => {
    const own = edgesOf('dataplane/plugins/jwt/manifest.ts', "load: () => import('./index.ts'),")[0];
    const other = edgesOf(
      'dataplane/plugins/jwt/manifest.ts',
      "load: () => import('../key-auth/index.ts'),",
    )[0];
    expect(violations(own)).toEqual([]);
    expect(violations(other).join()).toContain('rule 2');
  });

  it('finds a cycle through value imports, not through type-only ones', () => {
    const a = edgesOf('dataplane/pipeline/a.ts', "import { b } from './b.ts';");
    const b = edgesOf('dataplane/pipeline/b.ts', "import { a } from './a.ts';");
    const bType = edgesOf('dataplane/pipeline/b.ts', "import type { A } from './a.ts';");
    expect(cycles([...a, ...b])).toHaveLength(1);
    expect(cycles([...a, ...bType])).toEqual([]);
  });
});
