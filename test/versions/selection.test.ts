/** The pure parts of canary selection: the cookie a sticky canary reads, and the bucket of a key. */
import { describe, expect, it } from 'vitest';
import { bucketOf, canaryChooser, cookieValue } from '../../dataplane/handlers/proxy/canary.ts';
import type { RequestContext } from '../../dataplane/pipeline/context.ts';

describe('cookieValue', () => {
  it('finds the named cookie among others, by exact name', () => {
    expect(cookieValue('theme=dark; session=abc; xsession=zzz', 'session')).toBe('abc');
    expect(cookieValue('xsession=zzz', 'session')).toBeUndefined();
    expect(cookieValue(' session = a=b ', 'session')).toBe('a=b');
  });
  it('an absent header or an empty value is no cookie (such callers are split at random)', () => {
    expect(cookieValue(undefined, 'session')).toBeUndefined();
    expect(cookieValue('session=', 'session')).toBeUndefined();
  });
});

describe('bucketOf', () => {
  it('spreads keys evenly over 0..99: 10,000 consumer ids, each decile within ±2 % of 10 %', () => {
    const deciles = new Array(10).fill(0);
    for (let i = 0; i < 10_000; i++) deciles[Math.floor(bucketOf(`consumer-${i}`) / 10)]++;
    for (const n of deciles) expect(Math.abs(n / 10_000 - 0.1)).toBeLessThanOrEqual(0.02);
  });
});

describe('canaryChooser', () => {
  const ctx = (consumer: string | null, cookie?: string) =>
    ({
      consumer: consumer && { id: consumer, source: 'key-auth' },
      headers: cookie ? { cookie } : {},
    }) as RequestContext;
  it('weight 0 never and weight 100 always choose the canary, sticky or not', () => {
    for (const sticky of [undefined, { consumer: true as const }]) {
      expect(canaryChooser({ upstream: 'c', weight: 0, sticky })(ctx('alice'))).toBe(false);
      expect(canaryChooser({ upstream: 'c', weight: 100, sticky })(ctx('alice'))).toBe(true);
    }
  });
  it('sticky: the side is the bucket of the consumer id or the cookie value', () => {
    const byConsumer = canaryChooser({ upstream: 'c', weight: 30, sticky: { consumer: true } });
    const byCookie = canaryChooser({ upstream: 'c', weight: 30, sticky: { cookie: 'sid' } });
    for (const id of ['alice', 'bob', 'carol', 'dave']) {
      expect(byConsumer(ctx(id))).toBe(bucketOf(id) < 30);
      expect(byCookie(ctx(null, `sid=${id}`))).toBe(bucketOf(id) < 30);
    }
  });
});
