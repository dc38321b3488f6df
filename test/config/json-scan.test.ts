/**
 * config/json-scan.ts: the duplicate key of any object at any depth, with its path, against an
 * oracle that builds the JSON text itself (objects as lists of members, so keys can repeat, and
 * keys spelled with escapes so "a" and "\u0061" are one key).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { scanJson } from '../../dataplane/config/json-scan.ts';

type Tree = { obj: [string, Tree][] } | { arr: Tree[] } | { leaf: string | number | boolean | null };

/** Keys from a small alphabet (so they collide), some holding quotes and backslashes. */
const key = fc.constantFrom('a', 'b', 'k', 'a"b', 'c\\', 'é', '');
const tree: fc.Arbitrary<Tree> = fc.letrec<{ t: Tree }>((tie) => ({
  t: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.record({ leaf: fc.oneof(fc.string(), fc.integer(), fc.boolean(), fc.constant(null)) }),
    fc.record({ obj: fc.array(fc.tuple(key, tie('t')), { maxLength: 4 }) }),
    fc.record({ arr: fc.array(tie('t'), { maxLength: 4 }) }),
  ),
})).t;

/** The key written with every character escaped (\uXXXX), or plainly: both read as the same key. */
const spell = (k: string, escaped: boolean) =>
  escaped
    ? `"${[...k].map((c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`).join('')}"`
    : JSON.stringify(k);

function write(t: Tree, escapeNext: () => boolean): string {
  if ('leaf' in t) return JSON.stringify(t.leaf);
  if ('arr' in t) return `[ ${t.arr.map((x) => write(x, escapeNext)).join(' , ')} ]`;
  return `{${t.obj.map(([k, v]) => `${spell(k, escapeNext())} : ${write(v, escapeNext)}`).join(',')}}`;
}

/** The first duplicate in document order (the scan reads in that order), with its path. */
function firstDuplicate(t: Tree, path: string): { key: string; path: string } | null {
  if ('leaf' in t) return null;
  if ('arr' in t) {
    for (let i = 0; i < t.arr.length; i++) {
      const d = firstDuplicate(t.arr[i], `${path}[${i}]`);
      if (d !== null) return d;
    }
    return null;
  }
  const seen = new Set<string>();
  for (const [k, v] of t.obj) {
    const at = path === '' ? k : `${path}.${k}`;
    if (seen.has(k)) return { key: k, path: at };
    seen.add(k);
    const d = firstDuplicate(v, at);
    if (d !== null) return d;
  }
  return null;
}

describe('scanJson', () => {
  it('finds the first duplicate key at any depth, whatever the spelling, and only then', () => {
    fc.assert(
      fc.property(tree, fc.infiniteStream(fc.boolean()), (t, flips) => {
        const coins = flips[Symbol.iterator]();
        const text = write(t, () => coins.next().value as boolean);
        JSON.parse(text); // the scan's precondition
        expect(scanJson(text).duplicate).toEqual(firstDuplicate(t, ''));
      }),
      { numRuns: 2000 },
    );
  });

  it.each([
    ['{"a":1,"a":2}', { key: 'a', path: 'a' }],
    ['{"x":{"a":1,"b":{"c":1},"a":3}}', { key: 'a', path: 'x.a' }],
    ['[{"k":1},{"k":2,"k":3}]', { key: 'k', path: '[1].k' }],
    ['{"items":[{"sku":"a"},{"sku":"b","qty":1,"sku":"c"}]}', { key: 'sku', path: 'items[1].sku' }],
    ['{"a":1,"\\u0061":2}', { key: 'a', path: 'a' }],
    ['{"s":"\\\\","s":1}', { key: 's', path: 's' }],
  ])('%s: %j', (text, dup) => {
    expect(scanJson(text).duplicate).toEqual(dup);
  });
});
