/**
 * Golden files: the expected output of a test lives in a file next to its input. Run with
 * UPDATE_GOLDEN=1 (`make golden`) to write the files from the current code, then review the
 * diff like any other change.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, relative } from 'node:path';
import { expect } from 'vitest';
import { stringify } from 'yaml';

export const UPDATE_GOLDEN = process.env.UPDATE_GOLDEN === '1';

/** Compares text with the file's content, or (UPDATE_GOLDEN=1) writes the file. */
export function expectGolden(actual: string, file: string): void {
  if (UPDATE_GOLDEN) {
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, actual);
    return;
  }
  const name = relative(process.cwd(), file);
  if (!existsSync(file))
    throw new Error(`${name} does not exist: run \`make golden\` and review what it writes`);
  expect(actual, `${name} differs; if the change is intended, run \`make golden\` and review the diff`).toBe(
    readFileSync(file, 'utf8'),
  );
}

/** YAML as golden files hold it: no anchors for shared objects, no line folding. */
export function toGoldenYaml(value: unknown): string {
  return stringify(value, { aliasDuplicateObjects: false, lineWidth: 0 });
}
