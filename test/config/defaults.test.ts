/** withDefaults: an option passed along as undefined (an absent flag) never erases a default. */
import { expect, it } from 'vitest';
import { withDefaults } from '../../dataplane/config/defaults.ts';

it('keeps a default where the option is undefined, takes any other value (0, false, "" included)', () => {
  const o = withDefaults({ resyncMs: 10_000, timeoutMs: 5_000, on: true, name: 'x' }, {
    resyncMs: undefined,
    timeoutMs: 0,
    on: false,
    name: '',
    extra: 1,
  } as {
    resyncMs?: number;
    timeoutMs?: number;
    on?: boolean;
    name?: string;
    extra?: number;
  });
  expect(o).toEqual({ resyncMs: 10_000, timeoutMs: 0, on: false, name: '', extra: 1 });
});
