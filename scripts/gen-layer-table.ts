/**
 * Writes the layer table of docs/architecture.md from test/architecture/layers.ts (`make docs`):
 * the import-graph test and the docs read one table.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { layerTable, withLayerTable } from '../test/architecture/layer-table.ts';
import { LAYERS } from '../test/architecture/layers.ts';

const readme = join(dirname(fileURLToPath(import.meta.url)), '..', 'docs', 'architecture.md');
const before = readFileSync(readme, 'utf8');
const after = withLayerTable(before, layerTable(LAYERS));
if (after !== before) writeFileSync(readme, after);
console.log(
  after === before
    ? 'docs/architecture.md: the layer table is up to date'
    : 'wrote docs/architecture.md (layer table)',
);
