/**
 * Writes the README's generated sections (`make docs`): the layer table from
 * test/architecture/layers.ts (the import-graph test and the README read one table), and the
 * ingress-nginx annotation table from controller/ingress/annotations.ts (the controller's).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { layerTable, withLayerTable, withSection } from '../test/architecture/layer-table.ts';
import { LAYERS } from '../test/architecture/layers.ts';
import { annotationTable, BEGIN, END } from '../test/ingress/annotation-table.ts';

const readme = join(dirname(fileURLToPath(import.meta.url)), '..', 'README.md');
const before = readFileSync(readme, 'utf8');
const after = withSection(withLayerTable(before, layerTable(LAYERS)), BEGIN, END, annotationTable());
if (after !== before) writeFileSync(readme, after);
console.log(
  after === before ? 'README.md: its generated tables are up to date' : 'wrote README.md (generated tables)',
);
