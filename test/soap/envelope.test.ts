/**
 * The pure parts of the soap handler: the XML text escaper (config/template.ts), body.PATH only
 * where it is allowed, the envelope's markup compiled once (versions, namespaces, shared
 * parents, literal text escaped), the generic JSON → XML mapping and its refusals, the body
 * source, and the data plane's door refusing a hand-written soap entry that cannot work.
 */
import { describe, expect, it } from 'vitest';
import { compileTemplate, render, xmlText } from '../../dataplane/config/template.ts';
import type { Route } from '../../dataplane/config/route-table.ts';
import { validateRouteTable } from '../../dataplane/config/validate.ts';
import { BodySources } from '../../dataplane/handlers/soap/body-sources.ts';
import { compileEnvelope, jsonToXml, MappingError } from '../../dataplane/handlers/soap/envelope.ts';
import type { SoapHandler } from '../../dataplane/handlers/soap/manifest.ts';
import type { RequestContext } from '../../dataplane/pipeline/context.ts';
import { route, snapshot, upstream } from '../helpers/tables.ts';

const entry = (over: Partial<SoapHandler> = {}): SoapHandler => ({
  type: 'soap',
  upstream: 'upstream/test/u/1',
  version: '1.1',
  action: '',
  operation: 'Op',
  qualified: true,
  maxResponseBytes: 1024,
  maxDepth: 64,
  ...over,
});

describe('xmlText', () => {
  it('escapes the five markup characters and CR; keeps other text, astral characters included', () => {
    expect(xmlText(`</a><b x="1">'&'</b>\r\n\t😀é`)).toBe(
      '&lt;/a&gt;&lt;b x=&quot;1&quot;&gt;&apos;&amp;&apos;&lt;/b&gt;&#13;\n\t😀é',
    );
  });

  it('refuses what XML 1.0 forbids: NUL, C0 controls, U+FFFE, U+FFFF, lone surrogates', () => {
    for (const bad of ['a\u0000', '\u0007', '\u000b', '\u001f', '\uFFFE', '\uFFFF', 'x\uD800y', '\uDC00'])
      expect(xmlText(bad), JSON.stringify(bad)).toBeNull();
  });
});

describe('body.PATH', () => {
  it('is a source only where the caller allows it', () => {
    expect(compileTemplate('{{ body.a }}')).toMatchObject({ error: expect.stringContaining('not a source') });
    expect(compileTemplate('{{ body.a.0.b }}', true)).toEqual({
      parts: [{ kind: 'body', name: 'a.0.b' }],
      literal: null,
    });
  });

  it('reads members and array items; scalars as text, absent and null as "", objects refused', () => {
    const ctx = { headers: {}, query: '', consumer: null, route: { id: 'r' } } as unknown as RequestContext;
    const s = new BodySources(ctx, null, { a: [{ b: 'x' }, { b: 2 }], t: true, n: null, o: { p: 1 } });
    expect([
      s.body('a.0.b'),
      s.body('a.1.b'),
      s.body('t'),
      s.body('n'),
      s.body('a.9.b'),
      s.body('a.x'),
    ]).toEqual(['x', '2', 'true', '', '', '']);
    expect(s.refused).toBeNull();
    expect(s.body('o')).toBe('');
    expect(s.body('a')).toBe('');
    expect(s.refused).toBe('o');
    expect(new BodySources(ctx, null, { ['__proto__']: 'no' }).body('constructor')).toBe('');
  });
});

describe('compileEnvelope', () => {
  it('1.1, qualified: the operation carries a default namespace its children share', () => {
    const e = compileEnvelope(entry({ namespace: 'urn:x' }));
    expect(e.head).toBe(
      '<?xml version="1.0" encoding="utf-8"?><soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/">' +
        '<soap:Body><Op xmlns="urn:x">',
    );
    expect(e.tail).toBe('</Op></soap:Body></soap:Envelope>');
    expect(e.children).toBeNull();
  });

  it('1.2, unqualified: the operation is prefixed, its children in no namespace', () => {
    const e = compileEnvelope(entry({ version: '1.2', namespace: 'urn:x', qualified: false }));
    expect(e.head).toContain('xmlns:soap="http://www.w3.org/2003/05/soap-envelope"');
    expect(e.head.endsWith('<o:Op xmlns:o="urn:x">')).toBe(true);
    expect(e.tail.startsWith('</o:Op>')).toBe(true);
  });

  it('declared elements: consecutive entries share parents; literal text escaped once, lookups per request', () => {
    const e = compileEnvelope(
      entry({
        elements: [
          { path: 'a/b/c', value: '{{ query.q }}' },
          { path: 'a/b/d', value: 'x & y' },
          { path: 'a/e', value: '<{{ header.h }}>' },
          { path: 'f', value: '1' },
          { path: 'a/g', value: '' },
        ],
      }),
    );
    const sources = {
      consumer: () => '',
      route: () => '',
      claim: () => '',
      header: () => '</e><evil/>',
      query: () => '"q"',
      path: () => '',
    };
    expect(render(e.children!, sources, xmlText)).toBe(
      '<a><b><c>&quot;q&quot;</c><d>x &amp; y</d></b><e>&lt;&lt;/e&gt;&lt;evil/&gt;&gt;</e></a><f>1</f><a><g></g></a>',
    );
    const literal = compileEnvelope(entry({ elements: [{ path: 'x', value: 'a<b' }] })).children!;
    expect(literal.literal).toBe('<x>a&lt;b</x>');
  });
});

describe('jsonToXml', () => {
  it('objects nest, arrays repeat, null is empty, scalars are escaped text, Unicode names kept', () => {
    expect(jsonToXml({ a: { b: [1, 'x<y', true] }, n: null, straße: 'ü', 'a.b-c_d': '' }, 64)).toBe(
      '<a><b>1</b><b>x&lt;y</b><b>true</b></a><n/><straße>ü</straße><a.b-c_d></a.b-c_d>',
    );
  });

  it('refuses a non-object body, names that are not XML names, arrays in arrays, depth, forbidden characters', () => {
    const refused = (body: unknown, depth = 64) => {
      try {
        jsonToXml(body, depth);
        return null;
      } catch (err) {
        expect(err).toBeInstanceOf(MappingError);
        return (err as Error).message;
      }
    };
    expect(refused([1])).toMatch(/must be an object/);
    expect(refused('x')).toMatch(/must be an object/);
    for (const name of ['a b', '1a', 'p:x', '<x>', 'xmlFoo', ''])
      expect(refused({ [name]: 1 }), name).toMatch(/not an XML element name/);
    expect(refused({ a: [[1]] })).toMatch(/array in an array/);
    expect(refused({ a: { b: { c: 1 } } }, 2)).toMatch(/deeper than 2/);
    expect(refused({ a: { b: 1 } }, 2)).toBeNull();
    expect(refused({ a: 'nul\u0000' })).toMatch(/XML 1\.0/);
  });
});

describe("the data plane's door", () => {
  it('refuses a soap entry whose values do not compile or read undeclared parameters, naming the field', () => {
    const r: Route = {
      ...route('s', 'upstream/test/u/1', '/s'),
      handler: entry({
        pattern: '/s/{id}',
        elements: [
          { path: 'a', value: '{{ path.other }}' },
          { path: 'b', value: '{{ body.x' },
          { path: 'c', value: 'bell \u0007' },
        ],
      }),
    };
    const errors = validateRouteTable(
      snapshot([r], [upstream('upstream/test/u/1', 'http://127.0.0.1:9')]).table,
    );
    expect(errors.map((e) => e.field)).toEqual([
      'handler.elements[0].value',
      'handler.elements[1].value',
      'handler.elements[2].value',
    ]);
  });

  it('refuses a prefixed operation (the schema) and an unknown upstream', () => {
    const r: Route = { ...route('s', 'upstream/test/u/1', '/s'), handler: entry({ operation: 'p:Op' }) };
    const up = [upstream('upstream/test/u/1', 'http://127.0.0.1:9')];
    expect(validateRouteTable(snapshot([r], up).table).map((e) => e.field)).toEqual(['handler.operation']);
    const unknown: Route = { ...r, handler: entry({ upstream: 'upstream/test/nope/1' }) };
    expect(validateRouteTable(snapshot([unknown], up).table).map((e) => e.field)).toEqual([
      'handler.upstream',
    ]);
  });
});
