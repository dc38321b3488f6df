import { describe, expect, it } from 'vitest';
import { normalizeTarget } from '../../dataplane/config/path-grammar.ts';

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
    ['/%e2%82%ac', '/%E2%82%AC'],
    ['/%C2%80', '/%C2%80'],
    ['/%F0%9F%98%80', '/%F0%9F%98%80'],
    ['/%ED%9F%BF', '/%ED%9F%BF'],
    ['/%F4%8F%BF%BF', '/%F4%8F%BF%BF'],
    ['/100%25/x', '/100%25/x'],
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
    ['/%25%36%31dmin', 'double percent-encoding'],
    ['/%25%341', 'double percent-encoding'],
  ])('%s is refused (%s)', (input, why) => {
    expect(path(input)).toMatch(/^ERROR: /);
    expect(path(input)).toContain(why);
  });

  it.each([
    ['overlong %C0%AE', '/a/%C0%AE%C0%AE/b'],
    ['overlong %C1%81', '/%C1%81'],
    ['overlong three bytes %E0%80%AE', '/%E0%80%AE'],
    ['overlong four bytes %F0%80%80%AE', '/%F0%80%80%AE'],
    ['lone continuation byte %80', '/a%80'],
    ['lone continuation byte %BF after a character', '/%C3%A9%BF'],
    ['truncated sequence %E2%82', '/%E2%82'],
    ['truncated sequence %E2%82 before a literal', '/%E2%82x'],
    ['truncated sequence %E2 before a "/"', '/%E2/%82%AC'],
    ['truncated sequence %F0%9F%98 before an ASCII escape', '/%F0%9F%98%41'],
    ['surrogate %ED%A0%80', '/%ED%A0%80'],
    ['above U+10FFFF %F4%90%80%80', '/%F4%90%80%80'],
    ['lead byte %F5', '/%F5%80%80%80'],
    ['byte %FF', '/%FF'],
  ])('refuses a path whose percent-decoding is not UTF-8 (%s)', (_why, input) => {
    expect(path(input)).toMatch(/^ERROR: /);
    expect(path(input)).toContain('UTF-8');
  });
});
