/**
 * Golden tests of the controller's pure pipeline: every test/golden/compile/<case>.in.yaml
 * (the objects a user would `kubectl apply`) is loaded and built, and the YAML of
 * { hash, table, status, diagnostics } (plus loadDiagnostics when the file has problems) must
 * equal <case>.out.yaml. Every table must also pass the data plane's validateRouteTable.
 *
 * To add a case: write test/golden/compile/<behaviour-in-kebab-case>.in.yaml, starting with a
 * comment that says what it shows; run `make golden` (UPDATE_GOLDEN=1 vitest run test/golden);
 * read the new .out.yaml and check it says what the comment claims; commit both files.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { build } from '../../controller/build.ts';
import { parseFiles } from '../../controller/source/file.ts';
import { validateRouteTable } from '../../dataplane/config/validate.ts';
import { expectGolden, toGoldenYaml, UPDATE_GOLDEN } from '../helpers/golden.ts';

const DIR = join(import.meta.dirname, 'compile');
const cases = readdirSync(DIR)
  .filter((f) => f.endsWith('.in.yaml'))
  .map((f) => f.slice(0, -'.in.yaml'.length))
  .sort();

function run(name: string) {
  const file = `${name}.in.yaml`;
  const loaded = parseFiles([{ file, text: readFileSync(join(DIR, file), 'utf8') }]);
  return { loaded, result: build(loaded.resources) };
}

describe('compile golden files', () => {
  it.each(cases)('%s', (name) => {
    const { loaded, result } = run(name);
    expect(validateRouteTable(result.snapshot.table)).toEqual([]);
    const out = {
      hash: result.snapshot.hash,
      table: result.snapshot.table,
      status: result.status,
      diagnostics: result.diagnostics,
      ...(loaded.diagnostics.length && { loadDiagnostics: loaded.diagnostics }),
    };
    expectGolden(toGoldenYaml(out), join(DIR, `${name}.out.yaml`));
  });

  it('the same objects, reordered and rewritten, give the same hash', () => {
    expect(run('same-input-same-hash').result.snapshot.hash).toBe(run('spec-example').result.snapshot.hash);
  });

  it('every .out.yaml has its .in.yaml', () => {
    if (UPDATE_GOLDEN) return;
    const orphans = readdirSync(DIR).filter(
      (f) => f.endsWith('.out.yaml') && !existsSync(join(DIR, f.replace(/\.out\.yaml$/, '.in.yaml'))),
    );
    expect(orphans).toEqual([]);
  });

  // The canonical text of a table is written without a sorted copy only when every object in it
  // holds its keys in sorted order (dataplane/config/canonical-json.ts); a table built otherwise
  // would still hash the same, but cost a copy of itself per build.
  it.each(cases)('%s: every object of the table holds its keys in sorted order', (name) => {
    const unsorted: string[] = [];
    const walk = (value: unknown, at: string): void => {
      if (value === null || typeof value !== 'object') return;
      if (Array.isArray(value)) return value.forEach((v, i) => walk(v, `${at}[${i}]`));
      const keys = Object.keys(value);
      if (keys.some((k, i) => i > 0 && keys[i - 1] > k)) unsorted.push(`${at}: ${keys.join(', ')}`);
      for (const k of keys) walk((value as Record<string, unknown>)[k], `${at}.${k}`);
    };
    walk(run(name).result.snapshot.table, 'table');
    expect(unsorted).toEqual([]);
  });
});
