/**
 * canonicalJson writes through a key-sorted copy and the native JSON.stringify (fast);
 * canonicalJsonReference is the definition written out plainly. They must give the same text
 * for every value, including those JSON.stringify alone would write differently.
 */
import { describe, expect, it } from 'vitest';
import { canonicalJson, canonicalJsonReference, sha256Hex } from '../../dataplane/config/canonical-json.ts';

const cases: Record<string, unknown> = {
  primitives: [null, true, false, 0, -0, 1.5, 1e21, 'a"\\\n\u2028', '\ud800'],
  'nested unsorted keys': {
    b: { d: 1, c: [{ z: 1, a: 2 }] },
    a: 'x',
    B: null,
    é: 1,
    z: 2,
    '\ud83d\ude00': 3,
    '\uffff': 4,
  },
  'already sorted': { a: { b: [1, { c: 2, d: 3 }] }, e: 'f' },
  'undefined values and array slots': { b: undefined, a: [undefined, 1], c: 1 },
  'functions and symbols': { b: () => 1, a: [() => 1, Symbol('s')], c: Symbol('t') },
  'digit keys': { '10': 1, '9': 2, a: 3, '-1': 4, '01': 5 },
  'digit keys deep': { x: [{ b: 1, '2': { '10': 1, '9': 2 } }] },
  '__proto__ as a key': JSON.parse('{"b":1,"__proto__":{"y":1,"x":2},"a":2}'),
  'class instances': { d: new Date(0), m: new Map([[1, 2]]), s: new String('ab'), n: new Number(3) },
  'own toJSON': { toJSON: () => 'no', a: 1 },
  'array toJSON': Object.assign([1, 2], { toJSON: () => 'no' }),
  'null prototype': Object.assign(Object.create(null), { b: 1, a: { toJSON: 1 } }),
  empty: { a: {}, b: [], c: '' },
  'repeated key lists': [
    { b: 1, a: 2 },
    { b: 3, a: { d: 1, c: 2 } },
    { a: 1, b: 2 },
    { a: 1, c: 2 },
    { a: 1, c: 2, b: 3 },
  ],
  'many key lists under one first key': Array.from({ length: 20 }, (_, i) => ({
    k: i,
    [`z${i % 12}`]: 1,
    [`a${i}`]: 2,
  })),
  'a digit key after a known key list': [
    { b: 1, a: 2 },
    { b: 1, '1': 2 },
  ],
};

describe('canonicalJson', () => {
  for (const [name, value] of Object.entries(cases))
    it(`${name}: same text as the reference`, () => {
      expect(canonicalJson(value)).toBe(canonicalJsonReference(value));
    });

  it('top-level oddities', () => {
    for (const v of [undefined, () => 1, Symbol('x'), 'x', 3, null])
      expect(canonicalJson(v)).toBe(canonicalJsonReference(v));
  });

  it('refuses non-finite numbers, as the reference does', () => {
    for (const v of [Number.NaN, { a: [Number.POSITIVE_INFINITY] }, { '1': Number.NaN }])
      expect(() => canonicalJson(v)).toThrow('non-finite');
  });

  it('does not change its input', () => {
    const value = { b: { d: 1, c: 2 }, a: [{ y: 1, x: 2 }] };
    const before = JSON.stringify(value);
    canonicalJson(value);
    expect(JSON.stringify(value)).toBe(before);
  });

  it('the hash of its text does not depend on key order', () => {
    const hashOf = (v: unknown) => sha256Hex(canonicalJson(v));
    expect(hashOf({ a: 1, b: { c: 2, d: 3 } })).toBe(hashOf({ b: { d: 3, c: 2 }, a: 1 }));
    expect(hashOf({ a: 1 })).toBe('015abd7f5cc57a2dd94b7590f04ad8084273905ee33ec5cebeae62276a97f862');
  });
});
