/**
 * observability/uuid.ts: random version 4 UUIDs (RFC 9562 §5.4), made faster than
 * crypto.randomUUID from the same kind of buffered entropy. Each must be well formed and new,
 * across refills of the buffer (128 a refill), with every random digit random.
 */
import { describe, expect, it } from 'vitest';
import { randomUUID } from '../../dataplane/observability/uuid.ts';

const V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('randomUUID', () => {
  const ids = Array.from({ length: 4000 }, () => randomUUID());

  it('makes well-formed version 4 UUIDs, lower-case, 36 characters', () => {
    for (const id of ids) expect(id).toMatch(V4);
  });

  it('never repeats one, across 31 refills of its entropy', () => {
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('draws every digit outside the version and variant at random: each takes all 16 values, about evenly', () => {
    for (let pos = 0; pos < 36; pos++) {
      if ([8, 13, 14, 18, 23].includes(pos)) continue;
      const counts = new Map<string, number>();
      for (const id of ids) counts.set(id[pos], (counts.get(id[pos]) ?? 0) + 1);
      const values = pos === 19 ? 4 : 16;
      expect(counts.size, `position ${pos}`).toBe(values);
      // 4000 draws over 16 values: 250 expected each; 150 is more than 6 standard deviations off.
      for (const n of counts.values())
        expect(n, `position ${pos}`).toBeGreaterThan(ids.length / values - 100 * (16 / values));
    }
  });
});
