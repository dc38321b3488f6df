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

  it('upstreamPath: the rewrite, then the base path and the query; a transformer’s path as it is', () => {
    const r = pathRewrite(prefix('/a'), false, replacePrefix('/b'));
    expect(upstreamPath('/a/x', 'q=1', r, '/base', null)).toBe('/base/b/x?q=1');
    expect(upstreamPath('/a/x', '', r, '', '/set/by/transformer')).toBe('/set/by/transformer');
    expect(upstreamPath('/a', '', pathRewrite(prefix('/a'), true, undefined), '/base')).toBe('/base');
  });
});
