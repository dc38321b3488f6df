/** The README's ingress-nginx annotation table is the controller's (annotations.ts): `make docs`. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ANNOTATIONS } from '../../controller/ingress/annotations.ts';
import { withSection } from '../architecture/layer-table.ts';
import { annotationTable, BEGIN, END } from './annotation-table.ts';

const README = readFileSync(join(import.meta.dirname, '..', '..', 'README.md'), 'utf8');

describe("the README's ingress-nginx annotation table", () => {
  it('is the one made from ANNOTATIONS', () => {
    expect(
      withSection(README, BEGIN, END, annotationTable()) === README,
      "README.md's annotation table differs from controller/ingress/annotations.ts: run `make docs`",
    ).toBe(true);
  });

  it('has a row per honoured annotation, and says what each does', () => {
    const table = README.slice(README.indexOf(BEGIN), README.indexOf(END));
    for (const a of ANNOTATIONS) {
      expect(table).toMatch(new RegExp(`\\| \`${a.name}\` +\\|`));
      expect(a.effect.length).toBeGreaterThan(0);
    }
  });

  it('escapes a "|" in a cell', () => {
    expect(annotationTable([{ name: 'x', effect: 'a | b' }]).split('\n')[2]).toMatch(
      /^\| `x` +\| a \\\| b +\| +\|$/,
    );
  });
});
