/**
 * The layer table of docs/architecture.md, made from LAYERS (layers.ts): `make docs` writes it between the two
 * markers, and layer-table.test.ts fails when the page holds anything else there. Pure: text in,
 * text out.
 */
import type { Layer } from './layers.ts';

export const BEGIN =
  '<!-- layer table: made from test/architecture/layers.ts by `make docs`; do not edit -->';
export const END = '<!-- end of layer table -->';

/** The table as markdown, lowest layer first, columns padded as the docs' other tables are. */
export function layerTable(layers: readonly Layer[]): string {
  const rows = layers.map((l, i) => [String(i), l.parts.map((p) => `\`${p}\``).join(', '), l.holds]);
  const head = ['layer', 'under `dataplane/`', 'holds'];
  const width = head.map((h, c) => Math.max(h.length, ...rows.map((r) => r[c].length)));
  const line = (cells: string[]) => `| ${cells.map((s, c) => s.padEnd(width[c])).join(' | ')} |`;
  return [line(head), line(width.map((w) => '-'.repeat(w))), ...rows.map(line)].join('\n');
}

/** `readme` with the text between the markers replaced by `table`; throws when a marker is missing. */
export function withLayerTable(readme: string, table: string): string {
  const from = readme.indexOf(BEGIN);
  const to = readme.indexOf(END);
  if (from < 0 || to < from) throw new Error(`docs/architecture.md has no "${BEGIN}" … "${END}" pair`);
  return `${readme.slice(0, from + BEGIN.length)}\n${table}\n${readme.slice(to)}`;
}
