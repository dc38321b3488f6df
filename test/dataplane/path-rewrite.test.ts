/** upstream/path.ts: the one path rewrite (stripPrefix, Gateway API's URLRewrite), by the spec's table. */
import { describe, expect, it } from 'vitest';
import type { PathMatch } from '../../dataplane/config/route-table.ts';
import { pathRewrite, upstreamPath } from '../../dataplane/upstream/path.ts';

const prefix = (value: string): PathMatch => ({ type: 'Prefix', value });
const replacePrefix = (value: string) => ({ path: { type: 'ReplacePrefixMatch' as const, value } });

describe('pathRewrite', () => {
  // Gateway API's HTTPPathModifier table (a match /foo is written /foo whether the route says /foo/).
  it.each([
    ['/foo/bar', '/xyz', '/xyz/bar'],
    ['/foo/bar', '/xyz/', '/xyz/bar'],
    ['/foo', '/xyz', '/xyz'],
    ['/foo/', '/xyz', '/xyz/'],
    ['/foo/bar', '/', '/bar'],
    ['/foo/', '/', '/'],
    ['/foo', '/', '/'],
  ])('ReplacePrefixMatch: %s with /foo replaced by %s is %s', (path, value, want) => {
    expect(pathRewrite(prefix('/foo'), false, replacePrefix(value))!(path)).toBe(want);
  });

  it('on the root prefix, leads the path with the replacement; "/" for "/" is no rewrite', () => {
    const r = pathRewrite(prefix('/'), false, replacePrefix('/xyz'))!;
    expect([r('/'), r('/a/b'), r('/a/')]).toEqual(['/xyz', '/xyz/a/b', '/xyz/a/']);
    expect(pathRewrite(prefix('/'), false, replacePrefix('/'))).toBeNull();
  });

  it('ReplaceFullPath puts the value in place of any matched path, its trailing "/" kept', () => {
    const r = pathRewrite(prefix('/full'), false, { path: { type: 'ReplaceFullPath', value: '/one/' } })!;
    expect([r('/full'), r('/full/a/b')]).toEqual(['/one/', '/one/']);
  });

  it('stripPrefix is ReplacePrefixMatch "/" on a Prefix match, and nothing elsewhere', () => {
    const strip = pathRewrite(prefix('/svc'), true, undefined)!;
    expect([strip('/svc'), strip('/svc/'), strip('/svc/a/b')]).toEqual(['/', '/', '/a/b']);
    expect(pathRewrite(prefix('/'), true, undefined)).toBeNull();
    expect(pathRewrite({ type: 'Exact', value: '/svc' }, true, undefined)).toBeNull();
    expect(pathRewrite(prefix('/svc'), false, undefined)).toBeNull();
    expect(pathRewrite(prefix('/svc'), false, { hostname: 'h.example' })).toBeNull();
  });

  describe('ReplaceFullPathWithCaptures (ingress-nginx rewrite-target)', () => {
    const captures = (pattern: string, value: string) =>
      pathRewrite({ type: 'RegularExpression', value: pattern }, false, {
        path: { type: 'ReplaceFullPathWithCaptures', value },
      })!;

    // ingress-nginx's documented example: path /something(/|$)(.*), rewrite-target /$2.
    it.each([
      ['/something', '/'],
      ['/something/', '/'],
      ['/something/new', '/new'],
      ['/SOMETHING/New/Path/', '/New/Path/'],
    ])('/something(/|$)(.*) → /$2: %s is %s', (path, want) => {
      expect(captures('/something(/|$)(.*)', '/$2')(path)).toBe(want);
    });

    it('puts each reference where it is written, as often as it is written; what follows the match is dropped', () => {
      const r = captures('/users/([0-9]+)/posts/([a-z]+)', '/v2/$2/by/$1/$1');
      expect(r('/users/42/posts/draft')).toBe('/v2/draft/by/42/42');
      expect(r('/users/42/posts/draft/extra')).toBe('/v2/draft/by/42/42');
      // A value without references is the whole path (nginx: rewrite ^/api /static/).
      expect(captures('/api', '/static/')('/api/a/b')).toBe('/static/');
    });

    it('a group that took no part is empty, and the result is normalized: no "//", no dot segment climbs', () => {
      expect(captures('/a(/x)?(/.*)?', '/b$1/$2')('/a')).toBe('/b/');
      expect(captures('/a(.*)', '/base/$1')('/a../../etc')).toBe('/etc');
      expect(captures('/a(.*)', '/base/x/$1')('/a..')).toBe('/base/');
    });

    it('a capture that cuts a percent-escape in two: the value without its captures, never an unreadable path', () => {
      expect(captures('/a(.)', '/b/$1/c')('/a%C3%A9')).toBe('/b/c');
    });

    it('with the query kept and the base path prepended, as every rewrite', () => {
      expect(upstreamPath('/something/new', 'q=1', captures('/something(/|$)(.*)', '/$2'), '/base')).toBe(
        '/base/new?q=1',
      );
    });
  });

  it('upstreamPath: the rewrite, then the base path and the query; a transformer’s path as it is', () => {
    const r = pathRewrite(prefix('/a'), false, replacePrefix('/b'));
    expect(upstreamPath('/a/x', 'q=1', r, '/base', null)).toBe('/base/b/x?q=1');
    expect(upstreamPath('/a/x', '', r, '', '/set/by/transformer')).toBe('/set/by/transformer');
    expect(upstreamPath('/a', '', pathRewrite(prefix('/a'), true, undefined), '/base')).toBe('/base');
  });
});
