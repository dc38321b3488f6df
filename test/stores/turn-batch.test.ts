/**
 * TurnBatch on its own: the items of one turn leave together, in order, at most `max` at a time;
 * each gets its own result; a failed send (rejected, thrown, or answered with the wrong number of
 * results) fails every item of that batch and no other.
 */
import { describe, expect, it } from 'vitest';
import { TurnBatch } from '../../dataplane/stores/turn-batch.ts';

/** A batch whose send records each batch and answers each item doubled. */
function doubling(max: number) {
  const sent: number[][] = [];
  const batch = new TurnBatch<number, number>(async (items) => {
    sent.push(items);
    return items.map((i) => i * 2);
  }, max);
  return { sent, batch };
}

describe('TurnBatch', () => {
  it('items added in one turn leave as one batch, each answered with its own result', async () => {
    const { sent, batch } = doubling(64);
    const results = await Promise.all([1, 2, 3, 4, 5].map((i) => batch.add(i)));
    expect(sent).toEqual([[1, 2, 3, 4, 5]]);
    expect(results).toEqual([2, 4, 6, 8, 10]);
  });

  it('items of later turns leave in later batches', async () => {
    const { sent, batch } = doubling(64);
    const first = Promise.all([batch.add(1), batch.add(2)]);
    await new Promise((r) => setImmediate(r));
    const second = Promise.all([batch.add(3)]);
    expect(await first).toEqual([2, 4]);
    expect(await second).toEqual([6]);
    expect(sent).toEqual([[1, 2], [3]]);
  });

  it('a full batch leaves at once; the rest of the turn follows at its end', async () => {
    const { sent, batch } = doubling(3);
    const pending = [1, 2, 3, 4, 5, 6, 7].map((i) => batch.add(i));
    expect(sent).toEqual([
      [1, 2, 3],
      [4, 5, 6],
    ]);
    expect(await Promise.all(pending)).toEqual([2, 4, 6, 8, 10, 12, 14]);
    expect(sent).toEqual([[1, 2, 3], [4, 5, 6], [7]]);
  });

  it('max 1 sends each item alone, at once', async () => {
    const { sent, batch } = doubling(1);
    const pending = [1, 2].map((i) => batch.add(i));
    expect(sent).toEqual([[1], [2]]);
    expect(await Promise.all(pending)).toEqual([2, 4]);
  });

  it('a rejected, thrown or miscounted send fails each item of its batch, and only those', async () => {
    let calls = 0;
    const batch = new TurnBatch<string, string>((items) => {
      calls++;
      if (items[0] === 'reject') return Promise.reject(new Error('refused'));
      if (items[0] === 'throw') throw new Error('thrown');
      if (items[0] === 'short') return Promise.resolve(['one']);
      return Promise.resolve(items.map((i) => `ok ${i}`));
    }, 2);
    const settled = await Promise.allSettled(
      ['reject', 'x', 'throw', 'y', 'short', 'z', 'fine', 'w'].map((i) => batch.add(i)),
    );
    expect(calls).toBe(4);
    const reasons = settled.map((s) => (s.status === 'rejected' ? (s.reason as Error).message : s.value));
    expect(reasons).toEqual([
      'refused',
      'refused',
      'thrown',
      'thrown',
      'a batch of 2 got 1 results',
      'a batch of 2 got 1 results',
      'ok fine',
      'ok w',
    ]);
  });
});
