/**
 * The proxy's one weighted choice (handlers/proxy/weighted.ts): exact shares within a few picks
 * from any start, nothing for a weight of 0, and a fresh start that favours no option (every
 * snapshot and every worker starts one).
 */
import { describe, expect, it } from 'vitest';
import { weightedChooser } from '../../dataplane/handlers/proxy/weighted.ts';

/** The largest gap, over every prefix of n picks, between an option's count and its weighted share. */
function worstGap(weights: number[], start: number, n: number): { gap: number; counts: number[] } {
  const total = weights.reduce((a, b) => a + b, 0);
  const choose = weightedChooser(weights, start);
  const counts = weights.map(() => 0);
  let gap = 0;
  for (let k = 1; k <= n; k++) {
    counts[choose()]++;
    for (let i = 0; i < weights.length; i++)
      gap = Math.max(gap, Math.abs(counts[i] - (k * weights[i]) / total));
  }
  return { gap, counts };
}

describe('weightedChooser', () => {
  it.each([
    [[70, 30, 0]],
    [[1, 1]],
    [[0, 5, 0, 1]],
    [[1, 999_999]],
    [[3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9, 3]],
  ])('weights %j: every option within 4 requests of its share at every point of 2,000 picks', (weights) => {
    for (const start of [0, 0.25, 0.5, 0.999]) {
      const { gap, counts } = worstGap(weights, start, 2_000);
      expect(gap).toBeLessThan(4);
      weights.forEach((w, i) => {
        if (w === 0) expect(counts[i]).toBe(0);
      });
    }
  });

  it('one option of weight above 0 takes every pick, wherever it stands', () => {
    for (const weights of [[5], [0, 5], [5, 0], [0, 0, 7, 0]]) {
      const choose = weightedChooser(weights, 0.3);
      const picked = new Set(Array.from({ length: 100 }, () => choose()));
      expect(picked).toEqual(new Set([weights.findIndex((w) => w > 0)]));
    }
  });

  it("a fresh chooser's first pick is weighted too: a restart favours no option (10,000 restarts, 90/10)", () => {
    let light = 0;
    for (let i = 0; i < 10_000; i++) if (weightedChooser([90, 10])() === 1) light++;
    expect(Math.abs(light / 10_000 - 0.1)).toBeLessThanOrEqual(0.02);
  });
});
