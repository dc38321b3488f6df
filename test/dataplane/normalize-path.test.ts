import { describe, expect, it } from 'vitest';
import { normalizeTarget } from '../../dataplane/server/normalize-path.ts';

const path = (t: string) => {
  const r = normalizeTarget(t);
  return 'error' in r ? `ERROR: ${r.error}` : r.query ? `${r.path}?${r.query}` : r.path;
};

describe('normalizeTarget', () => {
  it.each([
    ['/', '/'],
    ['/charges', '/charges'],
    ['/charges/', '/charges/'],
    ['/a//b///c', '/a/b/c'],
    ['/a/./b', '/a/b'],
    ['/a/b/../c', '/a/c'],
    ['/a/b/..', '/a/'],
    ['/a/b/.', '/a/b/'],
    ['/../../etc', '/etc'],
    ['/public/%2e%2e/admin', '/admin'],
    ['/public/%2E%2e/admin', '/admin'],
    ['/public/.%2e/admin', '/admin'],
    ['/%61pi/users', '/api/users'],
    ['/a%20b', '/a%20b'],
    ['/100%25', '/100%25'],
    ['/caf%c3%a9', '/caf%C3%A9'],
    ['/q?x=1&y=%2F', '/q?x=1&y=%2F'],
    ['/a/../b?c=../d', '/b?c=../d'],
    ['http://example.com/a/../b?x', '/b?x'],
    ['/file.json', '/file.json'],
    ['/user@host:8080/x', '/user@host:8080/x'],
  ])('%s → %s', (input, want) => {
    expect(path(input)).toBe(want);
  });

  it.each([
    ['/admin%2fsecret', 'encoded "/"'],
    ['/admin%2Fsecret', 'encoded "/"'],
    ['/a%5cb', 'encoded'],
    ['/a%00b', 'encoded'],
    ['/a%3bb', 'encoded ";"'],
    ['/a%3Fb', 'encoded "?"'],
    ['/a%23b', 'encoded "#"'],
    ['/a\\b', 'not allowed'],
    ['/a;jsessionid=1', 'not allowed'],
    ['/a%zzb', 'invalid percent-encoding'],
    ['/%2561dmin', 'double percent-encoding'],
    ['/a%4', 'invalid percent-encoding'],
    ['/a#frag', 'fragment'],
    ['*', 'must be a path'],
    ['/a b', 'not allowed'],
  ])('%s is refused (%s)', (input, why) => {
    expect(path(input)).toMatch(/^ERROR: /);
    expect(path(input)).toContain(why);
  });
});
