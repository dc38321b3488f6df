/**
 * Writes the docs' generated tables (`make docs`): the layer table of docs/architecture.md from
 * test/architecture/layers.ts (the import-graph test and the docs read one table), and the
 * ingress-nginx annotation table of docs/ingress.md from controller/ingress/annotations.ts (the
 * controller's).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { layerTable, withLayerTable, withSection } from '../test/architecture/layer-table.ts';
import { LAYERS } from '../test/architecture/layers.ts';
import { annotationTable, BEGIN, END } from '../test/ingress/annotation-table.ts';

const docs = join(dirname(fileURLToPath(import.meta.url)), '..', 'docs');
const write = (page: string, edit: (text: string) => string) => {
  const file = join(docs, page);
  const before = readFileSync(file, 'utf8');
  const after = edit(before);
  if (after !== before) writeFileSync(file, after);
  console.log(after === before ? `docs/${page}: its generated table is up to date` : `wrote docs/${page}`);
};
write('architecture.md', (text) => withLayerTable(text, layerTable(LAYERS)));
write('ingress.md', (text) => withSection(text, BEGIN, END, annotationTable()));
