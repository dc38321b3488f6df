/** The last good snapshot on disk: atomic, newest wins, and readable by its owner only (it holds Secrets). */
import { mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Snapshot } from '../../dataplane/config/route-table.ts';
import { LastGood } from '../../dataplane/state/last-good.ts';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sluice-last-good-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const snapshot = (hash: string) => ({ hash, table: { routes: [] } }) as unknown as Snapshot;

describe('LastGood', () => {
  it('keeps the newest of concurrent saves, in a file and folder only its owner can read', async () => {
    const state = join(dir, 'state');
    const lg = new LastGood(state);
    expect(await lg.load()).toBeNull();
    await Promise.all([lg.save(snapshot('a')), lg.save(snapshot('b')), lg.save(snapshot('c'))]);
    expect(await new LastGood(state).load()).toMatchObject({ hash: 'c' });
    expect(await readdir(state)).toEqual(['last-good-snapshot.json']);
    expect((await stat(join(state, 'last-good-snapshot.json'))).mode & 0o777).toBe(0o600);
    expect((await stat(state)).mode & 0o777).toBe(0o700);
  });
});
