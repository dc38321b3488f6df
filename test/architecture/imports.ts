/**
 * The import edges of the project's TypeScript, read from the source: every import and
 * export-from, type-only and dynamic ones included (import-graph.test.ts checks the layers over
 * them, dependencies.test.ts the packages they name).
 */
import { readdirSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

export const ROOT = join(import.meta.dirname, '..', '..');

export interface Edge {
  from: string;
  to: string;
  /** The specifier as written. */
  spec: string;
  typeOnly: boolean;
  dynamic: boolean;
}

export function filesUnder(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { recursive: true, withFileTypes: true })
    .filter((d) => d.isFile() && d.name.endsWith('.ts'))
    .map((d) => relative(ROOT, join(d.parentPath, d.name)));
}

const STATIC = /^\s*(import|export)\s+(type\s+)?(?:[^'";]*?\sfrom\s+)?['"]([^'"]+)['"]/gm;
const DYNAMIC = /\bimport\(\s*['"]([^'"]+)['"]\s*\)/g;

export function edgesOf(file: string, text: string): Edge[] {
  const edges: Edge[] = [];
  const to = (spec: string) =>
    spec.startsWith('.') ? relative(ROOT, resolve(ROOT, dirname(file), spec)) : spec;
  for (const m of text.matchAll(STATIC))
    edges.push({ from: file, to: to(m[3]), spec: m[3], typeOnly: m[2] !== undefined, dynamic: false });
  for (const m of text.matchAll(DYNAMIC))
    edges.push({ from: file, to: to(m[1]), spec: m[1], typeOnly: false, dynamic: true });
  return edges;
}
