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
  return markdownTable(['layer', 'under `dataplane/`', 'holds'], rows);
}

/** A markdown table with its columns padded, as biome formats the docs' tables. */
export function markdownTable(head: string[], rows: string[][]): string {
  const width = head.map((h, c) => Math.max(h.length, ...rows.map((r) => r[c].length)));
  const line = (cells: string[]) => `| ${cells.map((s, c) => s.padEnd(width[c])).join(' | ')} |`;
  return [line(head), line(width.map((w) => '-'.repeat(w))), ...rows.map(line)].join('\n');
}

/** `page` with the text between the markers replaced by `table`; throws when a marker is missing. */
export function withLayerTable(page: string, table: string): string {
  return withSection(page, BEGIN, END, table);
}

/** `page` with the text between two marker lines replaced (every generated section of the docs). */
export function withSection(page: string, begin: string, end: string, text: string): string {
  const from = page.indexOf(begin);
  const to = page.indexOf(end);
  if (from < 0 || to < from) throw new Error(`no "${begin}" … "${end}" pair`);
  return `${page.slice(0, from + begin.length)}\n${text}\n${page.slice(to)}`;
}
