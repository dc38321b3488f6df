/** Waits (polling) until `cond` holds; throws after `ms`. For state that settles asynchronously. */
import { setTimeout as sleep } from 'node:timers/promises';

export async function until(cond: () => boolean | Promise<boolean>, ms = 3_000, stepMs = 10): Promise<void> {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error('timed out waiting');
    await sleep(stepMs);
  }
}

/** Polls `get` until `ok` holds for its value, which it returns; throws naming `what` (and the last value) after `ms`. */
export async function waitFor<T>(
  what: string,
  get: () => T | Promise<T>,
  ok: (value: T) => boolean,
  ms = 15_000,
  stepMs = 100,
): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const value = await get();
    if (ok(value)) return value;
    if (Date.now() > end)
      throw new Error(`timed out waiting until ${what}; last: ${JSON.stringify(value)?.slice(0, 500)}`);
    await sleep(stepMs);
  }
}
