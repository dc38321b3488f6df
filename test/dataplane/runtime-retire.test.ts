/**
 * A replaced runtime is garbage as soon as no request uses it: the holder waits a grace period
 * before closing it, but that wait holds only its close(), never the runtime (routes, matcher,
 * table). Before, a push a second kept ten snapshots alive, and 2,000 routes brought a data plane
 * to its heap limit.
 */
import { setImmediate as tick } from 'node:timers/promises';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Runtime } from '../../dataplane/runtime/build-runtime.ts';
import type { DataPlane } from '../../dataplane/main.ts';
import { startTestDataPlane } from '../helpers/servers.ts';
import { route, snapshot, upstream } from '../helpers/tables.ts';

setFlagsFromString('--expose-gc');
const gc = (globalThis.gc ?? runInNewContext('gc')) as () => void;

let dp: DataPlane;
beforeAll(async () => {
  dp = await startTestDataPlane();
});
afterAll(() => dp.close());

const version = (n: number) =>
  snapshot(
    Array.from({ length: 50 }, (_, i) => route(`r${i}`, 'u', `/v${n}/r${i}`)),
    [upstream('u', 'http://127.0.0.1:9')],
  );

it('a replaced runtime is collected at once, while its close() still waits for the grace period', async () => {
  expect(dp.holder.apply(version(1)).result).toBe('applied');
  let closed = false;
  const first = new WeakRef(dp.holder.current as Runtime);
  const close = (dp.holder.current as Runtime).close;
  // The holder hands this function to its timer at the swap: a wrapper that notes the call.
  (dp.holder.current as { close: () => void }).close = () => {
    closed = true;
    close();
  };
  expect(dp.holder.apply(version(2)).result).toBe('applied');
  expect(dp.holder.apply(version(3)).result).toBe('applied');
  await tick();
  gc();
  await tick();
  gc();
  expect(first.deref(), 'the first runtime is still reachable after two swaps').toBeUndefined();
  expect(closed, 'closed before the grace period').toBe(false);
});
