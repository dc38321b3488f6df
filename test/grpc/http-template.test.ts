/** google.api.http path templates (config/http-template.ts): what parses, what matches, what each variable holds. */
import { describe, expect, it } from 'vitest';
import {
  type HttpTemplate,
  matchTemplate,
  parseTemplate,
  spansSegments,
  templateFields,
} from '../../dataplane/config/http-template.ts';

const parsed = (text: string) => {
  const t = parseTemplate(text);
  if ('error' in t) throw new Error(t.error);
  return t as HttpTemplate;
};

describe('http templates', () => {
  it('match and capture: one segment, several, nested fields, "*", "**" and a verb', () => {
    const cases: [string, string, Record<string, string> | null][] = [
      ['/v1/items/{id}', '/v1/items/42', { id: '42' }],
      ['/v1/items/{id=*}', '/v1/items/42', { id: '42' }],
      ['/v1/items/{id}', '/v1/items/42/x', null],
      ['/v1/items/{id}', '/v1/items/', null],
      ['/v1/{name=shelves/*/books/*}', '/v1/shelves/a/books/b', { name: 'shelves/a/books/b' }],
      ['/v1/{name=shelves/*/books/*}', '/v1/shelves/a/books', null],
      [
        '/v1/{name=shelves/*}/books/{book.id}',
        '/v1/shelves/a/books/7',
        { name: 'shelves/a', 'book.id': '7' },
      ],
      ['/v1/*/items/{id}', '/v1/anything/items/1', { id: '1' }],
      ['/files/{path=**}', '/files/a/b/c.txt', { path: 'a/b/c.txt' }],
      ['/files/{path=**}', '/files', null],
      ['/v1/{name=operations/*}:cancel', '/v1/operations/9:cancel', { name: 'operations/9' }],
      ['/v1/{name=operations/*}:cancel', '/v1/operations/9', null],
      ['/v1/items/{id}', '/v1/items/a%2Fb%20c', { id: 'a/b c' }],
      ['/v1/items/{id}', '/v1/items/%E0%A4%A', null], // not decodable
    ];
    for (const [template, path, want] of cases)
      expect({ template, path, got: matchTemplate(parsed(template), path) }).toEqual({
        template,
        path,
        got: want,
      });
  });

  it('names its variables and which of them span segments', () => {
    const t = parsed('/v1/{parent=projects/*}/items/{item.id}/{rest=**}');
    expect(templateFields(t)).toEqual(['parent', 'item.id', 'rest']);
    expect(['parent', 'item.id', 'rest'].map((f) => spansSegments(t, f))).toEqual([true, false, true]);
  });

  it('refuses what the grammar does not allow, saying why', () => {
    const bad: [string, RegExp][] = [
      ['v1/items', /must start with "\/"/],
      ['/v1/{id', /is not a \{field\}/],
      ['/v1/{1id}', /is not a field path/],
      ['/v1/{a.}', /is not a field path/],
      ['/v1/{id}/{id}', /given twice/],
      ['/v1/{path=**}/tail', /"\*\*" may only match the end/],
      ['/v1/**/x', /"\*\*" may only match the end/],
      ['/v1/{id=a b}', /is not "\*", "\*\*" or a literal/],
      ['/v1/it{em}', /is not "\*", "\*\*", a literal or a \{field\}/],
      ['/v1/x:', /the verb "" is not a literal/],
    ];
    for (const [template, why] of bad) {
      const t = parseTemplate(template);
      expect({ template, error: 'error' in t ? t.error : null }).toEqual({
        template,
        error: expect.stringMatching(why),
      });
    }
  });
});
