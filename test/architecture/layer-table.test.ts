/**
 * docs/architecture.md shows the layer table the import-graph test checks: both
 * come from LAYERS (layers.ts). After changing LAYERS, run `make docs`.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BEGIN, END, layerTable, withLayerTable } from './layer-table.ts';
import { LAYERS, placeOf } from './layers.ts';

const README = readFileSync(join(import.meta.dirname, '..', '..', 'docs', 'architecture.md'), 'utf8');

describe("docs/architecture.md's layer table", () => {
  it('is the one made from LAYERS', () => {
    expect(
      withLayerTable(README, layerTable(LAYERS)) === README,
      "docs/architecture.md's layer table differs from test/architecture/layers.ts: run `make docs`",
    ).toBe(true);
  });

  it('names every part of every layer, in order', () => {
    const table = README.slice(README.indexOf(BEGIN), README.indexOf(END));
    const rows = table.split('\n').filter((l) => /^\| \d+ /.test(l));
    expect(rows).toHaveLength(LAYERS.length);
    LAYERS.forEach((l, i) => {
      expect(rows[i]).toMatch(new RegExp(`^\\| ${i} `));
      for (const part of l.parts) expect(rows[i]).toContain(`\`${part}\``);
    });
  });
});

describe('layerTable and withLayerTable', () => {
  const layers = [
    { parts: ['config/'], holds: 'the contract' },
    { parts: ['a/', 'b.ts'], holds: 'more' },
  ];

  it('makes a padded markdown table, lowest layer first', () => {
    expect(layerTable(layers).split('\n')).toEqual([
      '| layer | under `dataplane/` | holds        |',
      '| ----- | ------------------ | ------------ |',
      '| 0     | `config/`          | the contract |',
      '| 1     | `a/`, `b.ts`       | more         |',
    ]);
  });

  it('replaces only what is between the markers', () => {
    const readme = `intro\n${BEGIN}\nold\n${END}\nrest\n`;
    expect(withLayerTable(readme, 'T')).toBe(`intro\n${BEGIN}\nT\n${END}\nrest\n`);
    expect(() => withLayerTable('no markers', 'T')).toThrow(/no "<!-- layer table/);
  });
});

describe('placeOf', () => {
  it.each([
    ['config/catalog.ts', 0],
    ['plugins/jwt/manifest.ts', 0],
    ['handlers/proxy/manifest.ts', 0],
    ['plugins/jwt/index.ts', 5],
    ['plugins/bearer.ts', 5],
    ['plugins/manifest.ts', 5],
    ['plugins/jwt/deeper/manifest.ts', 5],
    ['runtime/registry.ts', 6],
    ['main.ts', 8],
    ['cluster/primary.ts', 9],
  ])('%s is on layer %i', (path, layer) => {
    expect(placeOf(path)?.layer).toBe(layer);
  });

  it('makes the contract one part, and any other folder its own', () => {
    expect(placeOf('plugins/jwt/manifest.ts')?.part).toBe(placeOf('config/catalog.ts')?.part);
    expect(placeOf('errors/codes.ts')?.part).not.toBe(placeOf('observability/metrics.ts')?.part);
  });

  it('places nothing it does not list', () => {
    expect(placeOf('elsewhere/x.ts')).toBeUndefined();
    expect(placeOf('main.tsx')).toBeUndefined();
  });
});
