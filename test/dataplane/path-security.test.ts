/**
 * No request for a path under a protected prefix reaches the upstream through another route:
 * /admin is served only by the "admin" route (its own upstream, which a real deployment would
 * guard with auth); every trick below either lands on the admin route or is refused, and the
 * public upstream never sees an /admin path.
 */
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DataPlane } from '../../dataplane/main.ts';
import { rawRequest, statusOf } from '../helpers/raw-http.ts';
import { startTestDataPlane, startUpstream, type Upstream } from '../helpers/servers.ts';
import { route, snapshot, upstream } from '../helpers/tables.ts';

let pub: Upstream;
let admin: Upstream;
let dp: DataPlane;
beforeAll(async () => {
  pub = await startUpstream();
  admin = await startUpstream();
  dp = await startTestDataPlane({
    initialSnapshot: snapshot(
      [route('admin', 'admin', '/admin'), route('public', 'pub', '/public'), route('root', 'pub', '/')],
      [upstream('pub', pub.url), upstream('admin', admin.url)],
    ),
  });
});
afterAll(async () => {
  await dp.close();
  await pub.close();
  await admin.close();
});

const ATTEMPTS = [
  '/public/../admin/users',
  '/public/%2e%2e/admin/users',
  '/public/%2E%2E/admin/users',
  '/public/.%2e/admin/users',
  '/public/%2e./admin/users',
  '/public/..%2fadmin/users',
  '/public/%2e%2e%2fadmin/users',
  '/public%2f..%2fadmin/users',
  '/public/..%5cadmin/users',
  '/public/..\\admin/users',
  '//admin/users',
  '///admin//users',
  '/./admin/users',
  '/%61dmin/users',
  '/%2561dmin/users',
  '/admin;/users',
  '/public;/../admin/users',
  '/admin%00/users',
  '/admin%2fusers',
  '/public/%2e%2e%2f%2e%2e%2fadmin',
  '/public/./../admin',
  '/public/a/../../admin',
  'http://evil.example/public/../admin/users',
  '/public/%C0%AE%C0%AE/admin/users',
  '/public/%E0%80%AE%E0%80%AE/admin/users',
  '/public/%25%32%65%25%32%65/admin/users',
  '/public/%25%32e%25%32e/admin/users',
];

describe('path normalization keeps protected prefixes protected', () => {
  it.each(ATTEMPTS)('%s never reaches the public upstream as an /admin path', async (target) => {
    const before = pub.seen.length;
    const reply = await rawRequest(
      dp.proxyUrl,
      `GET ${target} HTTP/1.1\r\nHost: gw\r\nConnection: close\r\n\r\n`,
    );
    const status = statusOf(reply);
    expect([200, 400]).toContain(status);
    for (const s of pub.seen.slice(before)) {
      expect(decodeURIComponent(s.url).replaceAll('\\', '/').toLowerCase()).not.toMatch(/(^|\/)admin/);
    }
    if (status === 200) expect(pub.seen.length).toBe(before); // served, so by the admin route
  });

  it.each([
    ['overlong %C0%AE', '/public/%C0%AE'],
    ['lone continuation byte %80', '/public/a%80'],
    ['truncated sequence %E2%82', '/public/%E2%82'],
  ])(
    'refuses a path whose percent-decoding is not UTF-8 (%s) with 400 SLC_ERR_BAD_PATH',
    async (_why, target) => {
      const before = pub.seen.length;
      const reply = await rawRequest(
        dp.proxyUrl,
        `GET ${target} HTTP/1.1\r\nHost: gw\r\nConnection: close\r\n\r\n`,
      );
      expect(statusOf(reply)).toBe(400);
      expect(reply).toContain('SLC_ERR_BAD_PATH');
      expect(pub.seen.length).toBe(before);
    },
  );

  it('forwards exactly the normalized path that was matched', async () => {
    await request(`${dp.proxyUrl}/%61dmin/./x//y`).then((r) => r.body.dump());
    expect(admin.seen[admin.seen.length - 1].url).toBe('/admin/x/y');
  });
});
