/**
 * A pushed snapshot repeats a shared GatewayPlugin's entry in every route that uses it; once
 * parsed, each is its own copy. The runtime keeps one copy per distinct entry (5,000 routes
 * sharing a key-auth plugin: ~5 MB of heap less), and what the routes run and show is unchanged.
 */
import { request } from 'undici';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { DataPlane } from '../../dataplane/main.ts';
import { startTestDataPlane, startUpstream, type Upstream } from '../helpers/servers.ts';
import { route, snapshot, transformer, upstream } from '../helpers/tables.ts';

let up: Upstream;
let dp: DataPlane;
beforeAll(async () => {
  up = await startUpstream();
  dp = await startTestDataPlane();
});
afterAll(async () => {
  await dp.close();
  await up.close();
});

it('routes sharing an identical plugin entry keep one copy of it; a different config keeps its own', async () => {
  const tag = (value: string) => transformer('tag', { add: { headers: [`X-Tag:${value}`] } });
  // Parsed as pushed: every route its own copy of the entry.
  const pushed = JSON.parse(
    JSON.stringify(
      snapshot(
        [
          route('a', 'u', '/a', { plugins: [tag('one')] }),
          route('b', 'u', '/b', { plugins: [tag('one')] }),
          route('c', 'u', '/c', { plugins: [tag('two')] }),
        ],
        [upstream('u', up.url)],
      ),
    ),
  );
  expect(dp.holder.apply(pushed).result).toBe('applied');
  const [a, b, c] = dp.holder.current!.routes.map((r) => r.entry.plugins[0]);
  expect(a).toBe(b);
  expect(c).not.toBe(a);
  expect(c.config).toEqual({ add: { headers: ['X-Tag:two'] } });
  for (const [path, value] of [
    ['/a', 'one'],
    ['/b', 'one'],
    ['/c', 'two'],
  ]) {
    const res = await request(`${dp.proxyUrl}${path}`);
    await res.body.dump();
    expect(up.seen.at(-1)?.headers['x-tag']).toBe(value);
  }
});
