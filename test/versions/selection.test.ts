/** The pure parts of canary selection: the bucket of a key, and the choice a sticky canary makes. */
import { describe, expect, it } from 'vitest';
import { bucketOf, canaryChooser } from '../../dataplane/handlers/proxy/canary.ts';
import type { RequestContext } from '../../dataplane/pipeline/context.ts';

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

  it('sticky by cookie: no cookie or an empty one is split by weight, not pinned to the bucket of ""', () => {
    const byCookie = canaryChooser({ upstream: 'c', weight: 30, sticky: { cookie: 'sid' } });
    for (const cookie of [undefined, 'sid=', 'other=1']) {
      const canary = Array.from({ length: 200 }, () => byCookie(ctx(null, cookie))).filter(Boolean).length;
      expect(canary, `cookie ${cookie}`).toBeGreaterThan(30);
      expect(canary, `cookie ${cookie}`).toBeLessThan(100);
    }
  });
});
