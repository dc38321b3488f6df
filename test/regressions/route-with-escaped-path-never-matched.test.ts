/**
 * A route whose path holds a percent-escape (`/caf%C3%A9`, `/100%25`) answered 404 to requests for
 * exactly that path: the router stored route paths as written but looked up the decoded request
 * path (find-my-way decodes what it looks up), so the two never met. Fixed in
 * dataplane/runtime/router.ts (escaped paths are looked up so that decoding gives them back).
 */
import { request } from 'undici';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { DataPlane } from '../../dataplane/main.ts';
import { startTestDataPlane, startUpstream, type Upstream } from '../helpers/servers.ts';
import { route, snapshot, upstream } from '../helpers/tables.ts';

let up: Upstream;
let dp: DataPlane;
beforeAll(async () => {
  up = await startUpstream();
  dp = await startTestDataPlane({
    initialSnapshot: snapshot(
      [route('cafe', 'up', '/caf%C3%A9'), route('percent', 'up', '/100%25', { type: 'Exact' })],
      [upstream('up', up.url)],
    ),
  });
});
afterAll(async () => {
  await dp.close();
  await up.close();
});

it.each(['/caf%C3%A9', '/caf%C3%A9/menu', '/100%25'])('%s reaches its route', async (target) => {
  const res = await request(`${dp.proxyUrl}${target}`);
  await res.body.dump();
  expect(res.statusCode).toBe(200);
  expect(up.seen.at(-1)?.url).toBe(target);
});
