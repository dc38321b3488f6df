/**
 * The template engine (config/template.ts): compilation (every source, every refusal) and
 * rendering with each place's escaper; property tests feed arbitrary strings, CR, LF, NUL,
 * quotes, slashes and braces included, through every source and check that no header value
 * carries CR/LF/NUL, no path segment a "/", no query value a delimiter and no JSON value any
 * structure.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  compileTemplate,
  headerValue,
  jsonString,
  pathSegment,
  queryValue,
  render,
  type Sources,
  template,
} from '../../dataplane/config/template.ts';
import type { RequestContext } from '../../dataplane/pipeline/context.ts';
import { applyFieldVerbs, compileFieldVerbs } from '../../dataplane/pipeline/transform/json-fields.ts';
import { RequestSources } from '../../dataplane/pipeline/transform/sources.ts';
import {
  captureParams,
  compilePathRewrite,
  renderPath,
} from '../../dataplane/pipeline/transform/path-rewrite.ts';
import { applyQueryVerbs, compileQueryVerbs } from '../../dataplane/plugins/request-transformer/query.ts';
import { SAFE_PATH_VALUES, UNSAFE_PATH_VALUES } from '../helpers/unsafe-path-values.ts';

/** Every source answers with the same value. */
const all = (v: string): Sources => ({
  consumer: () => v,
  route: () => v,
  claim: () => v,
  header: () => v,
  query: () => v,
  path: () => v,
});

const EVERY_SOURCE =
  'a{{ consumer.id }}b{{route.id}}c{{ jwt.claims.sub }}d{{ header.x-tenant }}e{{ query.q }}f{{ path.id }}g';

/** Strings rich in what could inject: CR, LF, NUL, quotes, slashes, braces, separators, non-ASCII. */
const nasty = fc.string({
  unit: fc.oneof(
    fc.constantFrom(
      '\r',
      '\n',
      '\0',
      '"',
      "'",
      '/',
      '\\',
      '{',
      '}',
      '[',
      ']',
      ':',
      ',',
      '&',
      '=',
      '?',
      '#',
      '%',
      '+',
      '.',
      ' ',
    ),
    fc.constantFrom('é', '\u2028', '\ud800', '😀'),
    fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }),
  ),
  maxLength: 40,
});

describe('compiling templates', () => {
  it('splits literals and every source', () => {
    const t = template(EVERY_SOURCE);
    expect(t.parts).toEqual([
      'a',
      { kind: 'consumer' },
      'b',
      { kind: 'route' },
      'c',
      { kind: 'claim', name: 'sub' },
      'd',
      { kind: 'header', name: 'x-tenant' },
      'e',
      { kind: 'query', name: 'q' },
      'f',
      { kind: 'path', name: 'id' },
      'g',
    ]);
    expect(t.literal).toBeNull();
    expect(template('v1').literal).toBe('v1');
  });

  it.each([
    ['{{ secret.x }}', '{{ secret.x }} is not a source'],
    ['{{ consumer.name }}', '{{ consumer.name }} is not a source'],
    ['{{ header.a b }}', 'is not a source'],
    ['{{ path.1x }}', 'is not a source'],
    ['x{{ route.id', 'has "{{" without "}}"'],
    ['x }} y', 'has "}}" without "{{"'],
  ])('refuses %j', (text, message) => {
    const t = compileTemplate(text);
    expect('error' in t && t.error).toContain(message);
  });
});

describe('rendering', () => {
  it('reads each source from the request', () => {
    const ctx = {
      route: { id: 'route/r' },
      consumer: { id: 'alice', source: 'jwt', claims: { sub: 's1', n: 7, obj: { a: 1 } } },
      headers: { 'x-tenant': 'acme' },
      query: 'q=a%2Fb+c&q=second',
    } as unknown as RequestContext;
    const s = new RequestSources(ctx, { id: '42' }, false);
    expect(render(template(EVERY_SOURCE), s, jsonString)).toBe('aalicebroute/rcs1dacmeea/b cf42g');
    expect(
      render(template('{{ jwt.claims.n }}|{{ jwt.claims.obj }}|{{ jwt.claims.none }}'), s, jsonString),
    ).toBe('7||');
    expect(render(template('[{{ header.absent }}]'), s, jsonString)).toBe('[]');
  });

  it('sources read the headers as they came when the transformer edits them', () => {
    const ctx = { headers: { a: '1' }, query: '' } as unknown as RequestContext;
    const s = new RequestSources(ctx, null, true);
    delete ctx.headers.a;
    expect(s.header('a')).toBe('1');
  });

  it('header values refuse CR, LF and NUL rather than altering them', () => {
    for (const bad of ['a\r\nx-injected: 1', 'a\nb', 'a\0']) {
      expect(render(template('v={{ header.x }}'), all(bad), headerValue)).toBeNull();
    }
    expect(render(template('v={{ header.x }}'), all('ok "quoted" /path'), headerValue)).toBe(
      'v=ok "quoted" /path',
    );
  });

  it('path segments and query values percent-encode "/", "&", "=" and the rest', () => {
    expect(render(template('{{ path.id }}'), all('../a/b'), pathSegment)).toBe('..%2Fa%2Fb'); // then refused: renderPath
    expect(render(template('{{ query.q }}'), all('a&b=c#d+e'), queryValue)).toBe('a%26b%3Dc%23d%2Be');
  });
});

describe('templates cannot inject structure (property tests)', () => {
  const t = template(EVERY_SOURCE);

  it('a header value never holds CR, LF or NUL: the request is refused instead', () => {
    fc.assert(
      fc.property(nasty, (v) => {
        const out = render(t, all(v), headerValue);
        if (out === null) expect(/[\r\n\0]|[^\t\x20-\x7e\x80-\xff]/.test(v)).toBe(true);
        else expect(out).not.toMatch(/[\r\n\0]/);
      }),
      { numRuns: 500 },
    );
  });

  it('a path value stays inside its segment, or the request is refused when it could climb or split', () => {
    const rw = compilePathRewrite({ pattern: '/u/{id}', rewrite: '/v2/{{ path.id }}/x' }, template);
    // An oracle written apart from path-grammar.ts: what some back end could read as a separator or a dot segment.
    const couldClimb = (v: string) => {
      const n = v.toWellFormed().normalize('NFKC');
      return /[;?#\0]|%[0-9a-fA-F]{2}/.test(v) || /[/\\]/.test(n) || n === '.' || n === '..';
    };
    fc.assert(
      fc.property(nasty, (v) => {
        const path = renderPath(rw, all(v));
        if (typeof path !== 'string') {
          expect(couldClimb(v)).toBe(true);
          return;
        }
        expect(couldClimb(v)).toBe(false);
        const segs = path.split('/');
        expect(segs).toHaveLength(4);
        expect(segs[1]).toBe('v2');
        expect(segs[3]).toBe('x');
        expect(['.', '..']).not.toContain(segs[2]);
        expect(decodeURIComponent(segs[2])).toBe(v.toWellFormed());
      }),
      { numRuns: 1000 },
    );
  });

  it('refuses every spelling of a dot segment or separator, keeps the values near them', () => {
    const rw = compilePathRewrite({ pattern: '/u/{id}', rewrite: '/v2/{{ path.id }}' }, template);
    for (const v of UNSAFE_PATH_VALUES) expect(renderPath(rw, all(v)), v).toHaveProperty('error');
    for (const v of SAFE_PATH_VALUES) expect(renderPath(rw, all(v))).toBe(`/v2/${encodeURIComponent(v)}`);
    // A literal next to a value can make a dot segment too: "." + "." is refused.
    const joined = compilePathRewrite({ pattern: '/u/{id}', rewrite: '/.{{ path.id }}' }, template);
    expect(renderPath(joined, all('.'))).toHaveProperty('error');
    expect(renderPath(joined, all('a'))).toBe('/.a');
  });

  it('a query value adds no parameter and decodes back to the value', () => {
    const verbs = compileQueryVerbs({ add: { query: ['x:pre-{{ query.q }}-{{ header.h }}'] } }, template)!;
    fc.assert(
      fc.property(nasty, (v) => {
        const q = applyQueryVerbs(verbs, 'a=1', all(v));
        const params = new URLSearchParams(q);
        expect([...params.keys()]).toEqual(['a', 'x']);
        expect(params.get('x')).toBe(`pre-${v.toWellFormed()}-${v.toWellFormed()}`);
      }),
      { numRuns: 500 },
    );
  });

  it('a JSON value is always one string: no other field changes, no structure appears', () => {
    const verbs = compileFieldVerbs(
      { add: [`meta.who:${EVERY_SOURCE}`], replace: ['name:{{ header.h }}'] },
      template,
    )!;
    fc.assert(
      fc.property(nasty, (v) => {
        const body = { name: 'n', keep: [1, { a: 2 }] };
        applyFieldVerbs(verbs, body, all(v));
        const back = JSON.parse(JSON.stringify(body));
        expect(Object.keys(back)).toEqual(['name', 'keep', 'meta']);
        expect(back.name).toBe(v);
        expect(Object.keys(back.meta)).toEqual(['who']);
        expect(back.meta.who).toBe(render(t, all(v), jsonString));
        expect(back.keep).toEqual([1, { a: 2 }]);
      }),
      { numRuns: 500 },
    );
  });
});

describe('path parameters', () => {
  const rw = compilePathRewrite(
    { pattern: '/users/{id}/orders/{order}', rewrite: '/v2/{{ path.order }}' },
    template,
  );

  it('are captured decoded from a matching path, and nothing from another path', () => {
    expect(captureParams(rw, '/users/caf%C3%A9/orders/7')).toEqual({ id: 'café', order: '7' });
    expect(captureParams(rw, '/users/1/orders')).toBeNull();
    expect(captureParams(rw, '/users/1/carts/7')).toBeNull();
    expect(captureParams(rw, '/users//orders/7')).toBeNull();
  });

  it('a value of "." or ".." is refused, so the rewritten path never climbs (not even where a back end decodes %2E)', () => {
    expect(renderPath(rw, all('..'))).toEqual({
      error: 'segment 2 of the upstream path, from the request: a dot segment ("." or "..") is refused',
    });
  });
});

describe('JSON field verbs', () => {
  const s = all('V');

  it('remove, rename, replace (when present) and add (when absent) on nested paths', () => {
    const v = compileFieldVerbs(
      {
        remove: ['secret', 'a.gone', 'missing.deep'],
        rename: ['old.name:new.place.name', 'absent:x'],
        replace: ['a.b:R', 'a.absent:never'],
        add: ['a.c:A', 'a.b:never', 'made.on.the.way:M'],
      },
      template,
    )!;
    const body = { secret: 1, a: { b: 1, gone: 2 }, old: { name: 'n', other: 3 } };
    applyFieldVerbs(v, body, s);
    expect(body).toEqual({
      a: { b: 'R', c: 'A' },
      old: { other: 3 },
      new: { place: { name: 'n' } },
      made: { on: { the: { way: 'M' } } },
    });
  });

  it('leaves arrays and scalars on the way alone', () => {
    const v = compileFieldVerbs({ add: ['list.x:1', 'n.x:1'], remove: ['list.0'] }, template)!;
    const body = { list: [1, 2], n: 5 };
    applyFieldVerbs(v, body, s);
    expect(body).toEqual({ list: [1, 2], n: 5 });
  });

  it('a field named __proto__ is a field, never the prototype', () => {
    const v = compileFieldVerbs({ add: ['__proto__.polluted:yes'] }, template)!;
    const body: Record<string, unknown> = {};
    applyFieldVerbs(v, body, s);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(JSON.parse(JSON.stringify(body))).toEqual(JSON.parse('{"__proto__":{"polluted":"yes"}}'));
  });
});
