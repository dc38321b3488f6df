/** Writes docs/reference/*.md from the code (`make docs`): test/docs/reference.test.ts checks they are current. */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { renderReference } from '../test/docs/reference.ts';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
for (const [rel, text] of Object.entries(await renderReference())) {
  const file = join(root, rel);
  mkdirSync(dirname(file), { recursive: true });
  let before = '';
  try {
    before = readFileSync(file, 'utf8');
  } catch {}
  if (before !== text) writeFileSync(file, text);
  console.log(before === text ? `${rel}: up to date` : `wrote ${rel}`);
}
