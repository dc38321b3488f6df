/** docs/ingress.md's ingress-nginx annotation table is the controller's (annotations.ts): `make docs`. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ANNOTATIONS } from '../../controller/ingress/annotations.ts';
import { withSection } from '../architecture/layer-table.ts';
import { annotationTable, BEGIN, END } from './annotation-table.ts';

const PAGE = readFileSync(join(import.meta.dirname, '..', '..', 'docs', 'ingress.md'), 'utf8');

describe("docs/ingress.md's ingress-nginx annotation table", () => {
  it('is the one made from ANNOTATIONS', () => {
    expect(
      withSection(PAGE, BEGIN, END, annotationTable()) === PAGE,
      "docs/ingress.md's annotation table differs from controller/ingress/annotations.ts: run `make docs`",
    ).toBe(true);
  });

  it('has a row per honoured annotation, and says what each does', () => {
    const table = PAGE.slice(PAGE.indexOf(BEGIN), PAGE.indexOf(END));
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
