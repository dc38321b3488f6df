import { describe, expect, it } from 'vitest';
import { parseDuration } from '../../dataplane/config/duration.ts';

describe('parseDuration', () => {
  it.each([
    ['250ms', 250],
    ['5s', 5_000],
    ['1m', 60_000],
    ['2h', 7_200_000],
    ['1m30s', 90_000],
    ['1h2m3s4ms', 3_723_004],
    ['1s500ms', 1_500],
    ['30s1m', 90_000], // any order, as Go's time.ParseDuration
    ['0s', 0], // parses; the range check (at least 1ms) is the caller's
  ])('%s is %i ms', (text, ms) => {
    expect(parseDuration(text)).toBe(ms);
  });

  it('reads "ms" as milliseconds, not minutes and a stray "s"', () => {
    expect(parseDuration('5ms')).toBe(5);
    expect(parseDuration('5m5ms')).toBe(300_005);
  });

  it.each(['', '5', 's', '1.5s', '-1s', '5 s', '5sec', '1d', '5S', ' 5s'])('refuses %j', (text) => {
    expect(parseDuration(text)).toBeUndefined();
  });
});
