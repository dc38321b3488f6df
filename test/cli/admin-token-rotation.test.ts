/**
 * Rotating the admin token's Secret: the kubelet updates a mounted Secret by writing a new
 * timestamped directory and swapping the volume's ..data symlink to it (atomically, a rename);
 * `token` is a symlink to ..data/token. This test does exactly that to the files a real `sluice
 * dataplane` process and a real Publisher (the controller's pushes) read with --admin-token-file,
 * in the orders two pods can see a rotation: the controller first, the data plane first. No push
 * is refused; the old token stops working once the grace period is over.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RotatingFile } from '../../bin/lib/rotating-file.ts';
import { Publisher } from '../../controller/publish/publisher.ts';
import { type LaunchedProcess, launch } from '../helpers/processes.ts';
import { SecretVolume } from '../helpers/secret-volume.ts';
import { freePort, startUpstream, type Upstream } from '../helpers/servers.ts';
import { route, snapshot, upstream } from '../helpers/tables.ts';

/** The token Secret as the kubelet mounts it (token -> ..data/token). */
class TokenVolume extends SecretVolume {
  constructor(token: string) {
    super({ token });
  }
  get tokenFile() {
    return this.file('token');
  }
  rotate(token: string) {
    this.update({ token });
  }
}

describe('RotatingFile', () => {
  it('reads the new token after a ..data swap; the old one stays valid for the grace period only', () => {
    const volume = new TokenVolume('token-a\n');
    let now = 1_000;
    const f = new RotatingFile(volume.tokenFile, { graceMs: 60_000, now: () => now });
    expect(f.values()).toEqual(['token-a']);
    volume.rotate('token-b');
    expect(f.values()).toEqual(['token-b', 'token-a']);
    now += 59_999;
    expect(f.values()).toEqual(['token-b', 'token-a']);
    now += 1;
    expect(f.values()).toEqual(['token-b']);
    // A second rotation: the one before it is the previous one now.
    volume.rotate('token-c');
    expect(f.values()).toEqual(['token-c', 'token-b']);
  });

  it('keeps what it holds while the file is missing or empty; refuses an empty file at start', () => {
    const volume = new TokenVolume('token-a');
    const f = new RotatingFile(volume.tokenFile);
    rmSync(join(volume.dir, '..data'));
    expect(f.values()).toEqual(['token-a']);
    volume.rotate('');
    expect(f.values()).toEqual(['token-a']);
    expect(() => new RotatingFile(volume.tokenFile)).toThrow(/is empty/);
  });
});

describe("a rotation between a real data plane and the controller's pushes", () => {
  let up: Upstream;
  let dp: LaunchedProcess;
  let adminUrl: string;
  const dpVolume = new TokenVolume('token-a');
  const ctlVolume = new TokenVolume('token-a');
  const v = (n: number) => snapshot([route(`r${n}`, 'u', `/v${n}`)], [upstream('u', up.url)]);

  beforeAll(async () => {
    up = await startUpstream();
    const [port, adminPort] = [await freePort(), await freePort()];
    adminUrl = `http://127.0.0.1:${adminPort}`;
    dp = await launch(
      [
        'dataplane',
        '--state-dir',
        mkdtempSync(join(tmpdir(), 'sluice-state-')),
        '--port',
        String(port),
        '--admin-port',
        String(adminPort),
        '--admin-token-file',
        dpVolume.tokenFile,
      ],
      `${adminUrl}/healthz`,
      null,
      { what: 'dataplane' },
    );
  });
  afterAll(async () => {
    await dp?.stop();
    await up?.close();
  });

  /** One publish by a fresh Publisher holding the controller's token file: what the push ended as. */
  async function push(n: number, tokens: () => readonly string[]): Promise<string[]> {
    const results: string[] = [];
    const failures: string[] = [];
    const p = new Publisher({
      token: tokens,
      resyncMs: 3_600_000,
      backoffMs: { base: 60_000, max: 60_000 },
      onPush: (r) => results.push(r),
      log: (_level, msg, extra) => failures.push(`${msg} ${JSON.stringify(extra)}`),
    });
    p.setPods([{ key: adminUrl, name: 'pod-0', url: adminUrl }]);
    p.publish(v(n));
    p.setActive(true);
    const end = Date.now() + 5_000;
    while (results.length === 0 && failures.length === 0 && Date.now() < end)
      await new Promise((r) => setTimeout(r, 20));
    p.stop();
    const hash = (await (await fetch(`${adminUrl}/config`)).json()) as { hash: string };
    return hash.hash === v(n).hash ? results : [...results, `not applied; ${failures.join('; ')}`];
  }
  const put = (token: string) =>
    fetch(`${adminUrl}/cache?prefix=x`, { method: 'DELETE', headers: { authorization: `Bearer ${token}` } });

  it('the controller sees the new token first: its push is refused with it and sent again with the old one', async () => {
    const ctl = new RotatingFile(ctlVolume.tokenFile);
    expect(await push(1, ctl.values)).toEqual(['applied']);
    ctlVolume.rotate('token-b');
    expect(ctl.values()).toEqual(['token-b', 'token-a']);
    expect((await put('token-b')).status).toBe(401); // the data plane does not know it yet
    expect(await push(2, ctl.values)).toEqual(['applied']);
  });

  it('then the data plane: it takes the new token and, for the grace period, the old one', async () => {
    const ctl = new RotatingFile(ctlVolume.tokenFile);
    dpVolume.rotate('token-b');
    expect((await put('token-b')).status).not.toBe(401);
    expect((await put('token-a')).status).not.toBe(401);
    expect((await put('token-c')).status).toBe(401);
    expect(await push(3, ctl.values)).toEqual(['applied']);
  });

  it('the data plane first: a controller still on the old token pushes through the grace period', async () => {
    dpVolume.rotate('token-c');
    expect(await push(4, () => ['token-b'])).toEqual(['applied']);
    // After both rotations the first token is no longer accepted by anyone.
    expect((await put('token-a')).status).toBe(401);
    expect(await push(5, () => ['token-a'])).toEqual([
      'error',
      expect.stringMatching(/^not applied; .*PUT \/config answered 401/),
    ]);
  });
});
