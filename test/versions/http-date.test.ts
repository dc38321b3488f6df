/** The dates of versions' deprecation: RFC 3339 in, whole seconds; IMF-fixdate out. */
import { describe, expect, it } from 'vitest';
import { httpDate, parseRfc3339 } from '../../dataplane/config/http-date.ts';

describe('parseRfc3339', () => {
  it('reads a zone and drops fractions of a second', () => {
    expect(parseRfc3339('2026-01-01T00:00:00Z')).toBe(Date.UTC(2026, 0, 1));
    expect(parseRfc3339('2026-07-01T12:30:00+02:00')).toBe(Date.UTC(2026, 6, 1, 10, 30));
    expect(parseRfc3339('2026-07-01T00:00:00-05:30')).toBe(Date.UTC(2026, 6, 1, 5, 30));
    expect(parseRfc3339('2026-07-01T00:00:00.999Z')).toBe(Date.UTC(2026, 6, 1));
    expect(parseRfc3339('2024-02-29T00:00:00Z')).toBe(Date.UTC(2024, 1, 29));
  });
  it.each([
    '2026-02-29T00:00:00Z',
    '2026-04-31T00:00:00Z',
    '2026-13-01T00:00:00Z',
    '2026-01-01T24:00:00Z',
    '2026-01-01T00:00:00+24:00',
    '2026-01-01T00:00:00',
    '2026-01-01',
    'tomorrow',
  ])('refuses %s', (text) => {
    expect(parseRfc3339(text)).toBeUndefined();
  });
});

describe('httpDate', () => {
  it('is an IMF-fixdate', () => {
    expect(httpDate(Date.UTC(2026, 6, 1, 10, 30))).toBe('Wed, 01 Jul 2026 10:30:00 GMT');
  });
});
