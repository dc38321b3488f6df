/**
 * Property test of the one path grammar (dataplane/config/path-grammar.ts): many random paths,
 * built from the pieces that have broken gateways (escapes of every byte, dots, slashes, ";",
 * "\", unicode, valid and invalid multi-byte UTF-8 escapes), from a seeded generator so a
 * failure names a path that reproduces. For every path:
 * - if the ingress refuses it, the compiler refuses it as a route path;
 * - if both accept it, the route the compiler programs matches the request the ingress reads;
 * - a path the ingress accepts normalizes to itself again, is accepted as a route path, and a
 *   server decoding it once or twice reads the same thing (or refuses it).
 */
import { Value } from '@sinclair/typebox/value';
import { describe, expect, it } from 'vitest';
import { RouteRule } from '../../controller/api/gateway-route.ts';
import { build } from '../../controller/build.ts';
import { resourceSetFrom } from '../../controller/source/resource-set.ts';
import type { Route } from '../../dataplane/config/route-table.ts';
import { normalizePath, normalizeRoutePath, normalizeTarget } from '../../dataplane/config/path-grammar.ts';
import { RouteMatcher } from '../../dataplane/runtime/router.ts';
import type { RuntimeRoute } from '../../dataplane/pipeline/route.ts';
import { gatewayRoute } from '../helpers/fixtures.ts';
import { route } from '../helpers/tables.ts';

const SEED = Number(process.env.PATH_GRAMMAR_SEED ?? 20240917);
const RUNS = 20_000;

/** mulberry32: a tiny seeded PRNG, enough to spread test cases. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const hex = (b: number) => b.toString(16).padStart(2, '0');

function generator(seed: number) {
  const rnd = prng(seed);
  const int = (n: number) => Math.floor(rnd() * n);
  const pick = <T>(list: readonly T[]): T => list[int(list.length)];
  const cased = (s: string) => (rnd() < 0.5 ? s.toUpperCase() : s.toLowerCase());
  const pct = (b: number) => `%${cased(hex(b))}`;
  const pctAll = (bytes: Iterable<number>) => [...bytes].map(pct).join('');

  const LITERALS = [
    'a',
    'Z',
    '0',
    '-',
    '_',
    '~',
    '.',
    '!',
    '$',
    '&',
    "'",
    '(',
    ')',
    '*',
    '+',
    ',',
    '=',
    ':',
    '@',
  ];
  const REFUSED_LITERALS = [
    ';',
    '\\',
    ' ',
    '"',
    '<',
    '`',
    '^',
    '{',
    '|',
    '[',
    '%',
    'é',
    '\u0000',
    '\t',
    '\u2028',
  ];
  const INTERESTING_BYTES = [
    0x00, 0x23, 0x25, 0x2e, 0x2f, 0x3b, 0x3f, 0x5c, 0x41, 0x61, 0x7e, 0x20, 0x7f, 0x80, 0xff,
  ];
  // Code points around every boundary of the UTF-8 table.
  const CODE_POINTS = [
    0x41, 0x7f, 0x80, 0xe9, 0x7ff, 0x800, 0xfff, 0x1000, 0xd7ff, 0xe000, 0xfffd, 0xffff, 0x10000, 0x1f600,
    0x3ffff, 0x40000, 0x10ffff,
  ];
  const INVALID_UTF8 = [
    [0xc0, 0xae], // overlong "."
    [0xc1, 0xbf],
    [0xe0, 0x80, 0xae],
    [0xe0, 0x9f, 0xbf],
    [0xf0, 0x80, 0x80, 0xae],
    [0xf0, 0x8f, 0xbf, 0xbf],
    [0xed, 0xa0, 0x80], // surrogates
    [0xed, 0xbf, 0xbf],
    [0xf4, 0x90, 0x80, 0x80], // above U+10FFFF
    [0xf5, 0x80, 0x80, 0x80],
    [0xff],
    [0x80], // lone continuation
    [0xbf],
    [0xc3], // truncated
    [0xe2, 0x82],
    [0xf0, 0x9f, 0x98],
    [0xc3, 0xc3],
  ];

  const piece = (): string => {
    const r = rnd();
    if (r < 0.3) return pick(LITERALS);
    if (r < 0.36) return pick(['.', '..', '%2e', '%2E', '.%2e', '%2e.', '%2e%2e']);
    if (r < 0.42) return pick(REFUSED_LITERALS);
    if (r < 0.52) return pct(pick(INTERESTING_BYTES));
    if (r < 0.62) return pct(int(256)); // every byte, sooner or later
    if (r < 0.68) return pick(['%', '%4', '%zz', '%g0', '%0', '%%41']); // invalid escapes
    if (r < 0.74) return `%25${pick(['41', '2e', '2F', pct(0x34) + '1', pct(0x36) + pct(0x31), 'zz', ''])}`;
    if (r < 0.86) return pctAll(Buffer.from(String.fromCodePoint(pick(CODE_POINTS)), 'utf8'));
    if (r < 0.94) return pctAll(pick(INVALID_UTF8));
    return pick(['/', '//', '?', '#', 'ü', '😀']); // structure inside a segment, and raw unicode
  };

  return (): string => {
    let path = '';
    const segments = 1 + int(5);
    for (let s = 0; s < segments; s++) {
      path += rnd() < 0.1 ? '//' : '/';
      // Mostly clean pieces, so enough paths are accepted for the second property to mean something.
      const n = int(4);
      for (let p = 0; p < n; p++) path += rnd() < 0.5 ? pick(LITERALS) : piece();
    }
    if (rnd() < 0.2) path += '/';
    return path;
  };
}

const pathItem = RouteRule.properties.paths.items;

/** What the compiler makes of a route path: the CRD schema (what kubectl and the controller check) then the grammar. */
function compileRoutePath(path: string): string | { error: string } {
  if (!Value.Check(pathItem, path)) return { error: 'refused by the GatewayRoute schema' };
  return normalizeRoutePath(path);
}

function runtimeRoute(entry: Route): RuntimeRoute {
  return {
    id: entry.id,
    entry,
    methods: null,
    hosts: null,
    headers: null,
    cookies: null,
    query: null,
  } as RuntimeRoute;
}

/** Whether a route with this (table) path, of this type, matches a request for `requestPath`. */
function matches(routePath: string, type: 'Prefix' | 'Exact', requestPath: string): boolean {
  const m = new RouteMatcher([runtimeRoute(route('r', 'u', routePath, { type }))]);
  return m.match(requestPath, 'GET', 'example.com', {}) !== null;
}

/** decodeURIComponent, or null where it refuses (invalid escape or not UTF-8). */
function decodeOnce(s: string): string | null {
  try {
    return decodeURIComponent(s);
  } catch {
    return null;
  }
}

describe('path grammar properties', () => {
  const paths = Array.from({ length: RUNS }, generator(SEED));
  const ingress = paths.map((p) => normalizeTarget(p));
  const compiled = paths.map(compileRoutePath);

  it('the generator covers accepted and refused paths on both sides', () => {
    const accepted = ingress.filter((t) => !('error' in t)).length;
    const bothAccepted = compiled.filter((c) => typeof c === 'string').length;
    expect(accepted).toBeGreaterThan(RUNS / 10);
    expect(accepted).toBeLessThan(RUNS - RUNS / 10);
    expect(bothAccepted).toBeGreaterThan(RUNS / 20);
    const reasons = new Set(ingress.flatMap((t) => ('error' in t ? [t.error.replace(/".*"/, '…')] : [])));
    expect(reasons.size).toBeGreaterThanOrEqual(7);
  });

  it('a path the ingress refuses is refused by the compiler as a route path', () => {
    const escaped = paths.filter((_, i) => 'error' in ingress[i] && typeof compiled[i] === 'string');
    expect(escaped).toEqual([]);
  });

  it('a path both accept: the route the compiler programs matches the request the ingress reads', () => {
    const bad: string[] = [];
    for (let i = 0; i < RUNS; i++) {
      const t = ingress[i];
      const r = compiled[i];
      if ('error' in t || typeof r !== 'string') continue;
      const requestPath = t.path;
      const trimmed =
        requestPath.length > 1 && requestPath.endsWith('/') ? requestPath.slice(0, -1) : requestPath;
      if (r !== trimmed) bad.push(`${paths[i]}: route ${r}, request ${requestPath}`);
      else if (!matches(r, 'Prefix', requestPath)) bad.push(`${paths[i]}: Prefix ${r} misses ${requestPath}`);
      else if (requestPath === trimmed && !matches(r, 'Exact', requestPath))
        bad.push(`${paths[i]}: Exact ${r} misses ${requestPath}`);
    }
    expect(bad).toEqual([]);
  });

  it('a path the ingress accepts is normal: it normalizes to itself, is a valid route path, reads the same decoded once or twice', () => {
    const bad: string[] = [];
    for (let i = 0; i < RUNS; i++) {
      const t = ingress[i];
      if ('error' in t) continue;
      const p = t.path;
      const why = (what: string) => bad.push(`${JSON.stringify(paths[i])} → ${JSON.stringify(p)}: ${what}`);
      if (normalizePath(p) !== p) why('normalizing again changes it');
      const asRoute = normalizeRoutePath(p);
      if (typeof asRoute !== 'string') why(`refused as a route path (${asRoute.error})`);
      const once = decodeOnce(p);
      if (once === null) {
        why('not valid percent-encoded UTF-8');
        continue;
      }
      // Decoding creates no structure: no new "/", no dot segment, none of the refused characters.
      if (once.split('/').length !== p.split('/').length) why('decoding adds a "/"');
      if (once.split('/').some((s) => s === '.' || s === '..')) why('a dot segment once decoded');
      if (/[\\;?#\0]/.test(once)) why('a refused character once decoded');
      // A server decoding twice reads the same path, or refuses it (a "%" not followed by an escape).
      const twice = decodeOnce(once);
      if (twice !== null && twice !== once) why(`decoding twice reads ${JSON.stringify(twice)}`);
    }
    expect(bad).toEqual([]);
  });

  it('a path the ingress accepts keeps every escape that is not of an unreserved character', () => {
    for (let i = 0; i < RUNS; i++) {
      const t = ingress[i];
      if ('error' in t) continue;
      for (const [, h] of t.path.matchAll(/%(..)/g)) {
        expect(h).toMatch(/^[0-9A-F]{2}$/);
        expect(String.fromCharCode(Number.parseInt(h, 16))).not.toMatch(/^[A-Za-z0-9\-._~]$/);
      }
    }
  });

  it('the full compile refuses them too: a diagnostic on the object at spec.routes[0].paths[0]', () => {
    // Through build(), for a sample: each path in its own GatewayRoute on its own host, so they cannot conflict.
    const sample = paths.slice(0, 400);
    expect(sample.filter((_, i) => typeof compiled[i] === 'string').length).toBeGreaterThan(40);
    const objects = sample.map((p, i) =>
      gatewayRoute(`r${i}`)
        .url('http://u.apps')
        .route('r', [p], { hosts: [`h${i}.example.com`] })
        .build(),
    );
    const result = build(resourceSetFrom(objects));
    const programmed = new Map(
      result.snapshot.table.routes.map((r) => [r.source.name, r.match.path.value] as const),
    );
    sample.forEach((p, i) => {
      const name = `r${i}`;
      const c = compiled[i];
      const diagnostics = result.diagnostics.filter((d) => d.object.name === name);
      if (typeof c === 'string') {
        expect({ p, diagnostics, programmed: programmed.get(name) }).toEqual({
          p,
          diagnostics: [],
          programmed: c,
        });
      } else {
        expect(programmed.has(name), p).toBe(false);
        expect(
          diagnostics.some((d) => d.field === 'spec.routes[0].paths[0]'),
          `${p}: ${JSON.stringify(diagnostics)}`,
        ).toBe(true);
      }
    });
  });
});
