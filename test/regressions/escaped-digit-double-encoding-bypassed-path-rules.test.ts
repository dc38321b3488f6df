/**
 * `/public/%25%32%65%25%32%65/admin` passed the double-encoding check, which looked for "%25"
 * before two hex digits in the raw path and so missed digits escaped themselves ("%32%65" is
 * "2e"): the gateway matched the public route and forwarded `/public/%252e%252e/admin`, which an
 * upstream that decodes twice reads as `/public/../admin`.
 * Fixed in dataplane/config/path-grammar.ts (the check runs on the decoded segment).
 */
import { request } from 'undici';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { DataPlane } from '../../dataplane/main.ts';
import { startTestDataPlane, startUpstream, type Upstream } from '../helpers/servers.ts';
import { route, snapshot, upstream } from '../helpers/tables.ts';

let pub: Upstream;
let dp: DataPlane;
beforeAll(async () => {
  pub = await startUpstream();
  dp = await startTestDataPlane({
    initialSnapshot: snapshot([route('public', 'pub', '/public')], [upstream('pub', pub.url)]),
  });
});
afterAll(async () => {
  await dp.close();
  await pub.close();
});

it('is refused with 400 SLC_ERR_BAD_PATH and never reaches the upstream', async () => {
  const res = await request(`${dp.proxyUrl}/public/%25%32%65%25%32%65/admin`);
  const body = (await res.body.json()) as { code?: string };
  expect(res.statusCode).toBe(400);
  expect(body.code).toBe('SLC_ERR_BAD_PATH');
  expect(pub.seen).toEqual([]);
});
