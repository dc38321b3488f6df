/** The query's order for the cache key and the idempotency fingerprint (dataplane/pipeline/query-key.ts). */
import { describe, expect, it } from 'vitest';
import { nameGroup, queryKey } from '../../dataplane/pipeline/query-key.ts';

describe('queryKey', () => {
  it('sorts different names, so two orders of distinct parameters are one resource', () => {
    expect(queryKey('b=2&a=1')).toBe('a=1&b=2');
    expect(queryKey('z=1&&a=2')).toBe('a=2&z=1');
    expect(queryKey('single=1')).toBe('single=1');
    expect(queryKey('')).toBe('');
  });

  it.each([
    ['repeated', 'id=1&id=2'],
    ['repeated without values', 'flag&flag=1'],
    ['names that differ in case (ASP.NET reads them as one)', 'id=1&ID=2'],
    ['a percent-encoded name', 'id=1&%69d=2'],
    ['a double-encoded name', 'id=1&%2569d=2'],
    ['array brackets (PHP, Rails, qs)', 'id[]=1&id[]=2'],
    ['indexed brackets (one array whose order is the parameters)', 'id[1]=2&id[0]=1'],
    ['encoded brackets', 'id%5B%5D=1&id%5b%5d=2'],
    ['dot, underscore and space (PHP reads all as a_b)', 'a.b=1&a_b=2&a+b=3'],
  ])('keeps the order of parameters a back end may read as one: %s', (_what, query) => {
    const params = query.split('&');
    const reversed = [...params].reverse().join('&');
    expect(queryKey(query)).toBe(query);
    expect(queryKey(reversed)).toBe(reversed);
    expect(queryKey(query)).not.toBe(queryKey(reversed));
  });

  it('sorts groups and keeps each group in place: ?id=2&b=1&id=1 is ?b=1&id=2&id=1', () => {
    expect(queryKey('id=2&b=1&id=1')).toBe('b=1&id=2&id=1');
    expect(queryKey('b=1&id=1&id=2')).toBe('b=1&id=1&id=2');
  });

  it('groups by the leading letters and digits, decoded and lower-cased', () => {
    expect(nameGroup('User_Id=7')).toBe('user');
    expect(nameGroup('%55ser%2e1=x')).toBe('user');
    expect(nameGroup('$top=3')).toBe('');
    expect(nameGroup('%ff=1')).toBe('');
    expect(nameGroup(`${'%25'.repeat(10)}41=1`)).toBe('');
  });
});
