import { describe, expect, it } from 'vitest';
import { normalizeRoutePath } from '../../controller/compile/normalize-paths.ts';

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
  ])('refuses %s', (path) => {
    expect(normalizeRoutePath(path)).toEqual({ error: expect.any(String) });
  });
});
