/**
 * Writes crds/*.yaml and charts/sluice/crds/*.yaml from controller/api (`make crds`), and removes
 * generated files of kinds that no longer exist.
 */
import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CRD_DIRS, renderCrds } from '../controller/api/crds.ts';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const files = renderCrds();

for (const dir of CRD_DIRS) {
  mkdirSync(join(root, dir), { recursive: true });
  for (const name of readdirSync(join(root, dir))) {
    const rel = `${dir}/${name}`;
    if (name.startsWith('sluice.dev_') && !(rel in files)) rmSync(join(root, rel));
  }
}
for (const [rel, text] of Object.entries(files)) {
  writeFileSync(join(root, rel), text);
  console.log(`wrote ${rel}`);
}
