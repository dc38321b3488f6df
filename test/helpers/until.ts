/** Waits (polling) until `cond` holds; throws after `ms`. For state that settles asynchronously. */
import { setTimeout as sleep } from 'node:timers/promises';

export async function until(cond: () => boolean | Promise<boolean>, ms = 3_000, stepMs = 10): Promise<void> {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error('timed out waiting');
    await sleep(stepMs);
  }
}
