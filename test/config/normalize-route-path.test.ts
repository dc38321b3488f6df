import { describe, expect, it } from 'vitest';
import { normalizeRoutePath } from '../../dataplane/config/path-grammar.ts';

describe('normalizeRoutePath', () => {
  it.each([
    ['/', '/'],
    ['///', '/'],
    ['/users/', '/users'],
    ['//orders//items/', '/orders/items'],
    ['/%7Euser', '/~user'],
    ['/caf%c3%a9', '/caf%C3%A9'],
    ['/a.b/..c/d..', '/a.b/..c/d..'],
  ])('%s → %s', (path, normalized) => {
    expect(normalizeRoutePath(path)).toBe(normalized);
  });

  it.each([
    '/a/../b',
    '/a/./b',
    '/..',
    '/a/%2e%2e/b',
    '/a/%2E',
    '/a%2fb',
    '/a%5cb',
    '/a%00',
    '/a%3b',
    '/a%zz',
    '/a%4',
    '/a%2561',
    '/a%25%36%31',
    '/a\\b',
    '/a;b',
    '/a b',
    'a/b',
  ])('refuses %s', (path) => {
    expect(normalizeRoutePath(path)).toEqual({ error: expect.any(String) });
  });

  it.each([
    ['overlong %C0%AE', '/a/%C0%AE'],
    ['lone continuation byte %80', '/a%80'],
    ['truncated sequence %E2%82', '/a%E2%82'],
    ['surrogate %ED%A0%80', '/%ED%A0%80'],
  ])('refuses a route path whose percent-decoding is not UTF-8 (%s)', (_why, path) => {
    expect(normalizeRoutePath(path)).toEqual({ error: expect.stringContaining('UTF-8') });
  });

  it('refuses double encoding, which the ingress refuses too (a route /a%2561 could never match)', () => {
    expect(normalizeRoutePath('/a%2561')).toEqual({
      error: expect.stringContaining('double percent-encoding'),
    });
  });
});
