/**
 * The built-in steps (runtime/builtin-steps.ts) are ordered with the route's plugins by phase,
 * through a real data plane: they appear in the route's chain where they run; the HTTPS redirect
 * answers before any plugin (and before the version's headers); a retired version's 410 comes
 * before authentication; a deprecated version's headers are set after every plugin's response
 * hook, so a response-transformer that replaces them finds none to replace.
 */
import { createHash } from 'node:crypto';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RouteDeprecation } from '../../dataplane/config/route-table.ts';
import type { DataPlane } from '../../dataplane/main.ts';
import { startTestDataPlane, startUpstream, type Upstream } from '../helpers/servers.ts';
import { pluginInstance, route, snapshot, upstream } from '../helpers/tables.ts';

const KEY = 'SECRET-API-KEY-alice';
const keyAuth = pluginInstance('keys', 'key-auth', {
  consumers: [
    {
      name: 'alice',
      secretKeyRef: { name: 'k', key: 'a' },
      sha256: createHash('sha256').update(KEY).digest('hex'),
    },
  ],
});
// Replaces the version's headers when they are already on the response: they are not, yet.
const replaceVersion = pluginInstance('replace', 'response-transformer', {
  replace: { headers: ['Deprecation:false', 'Sunset:never'] },
});
const deprecated: RouteDeprecation = {
  deprecation: '@1767225600',
  sunset: 'Thu, 31 Dec 2099 23:59:59 GMT',
  link: '<https://docs.example.com/v2>; rel="deprecation"',
};

let up: Upstream;
let dp: DataPlane;

beforeAll(async () => {
  up = await startUpstream();
  dp = await startTestDataPlane({
    initialSnapshot: snapshot(
      [
        route('dep', 'u', '/dep', { plugins: [keyAuth, replaceVersion], deprecation: deprecated }),
        route('gone', 'u', '/gone', { plugins: [keyAuth], deprecation: { ...deprecated, goneAtMs: 0 } }),
        route('redirect', 'u', '/redirect', {
          plugins: [replaceVersion, keyAuth],
          deprecation: deprecated,
          httpsRedirect: true,
        }),
      ],
      [upstream('u', up.url)],
    ),
  });
});

afterAll(async () => {
  await dp?.close();
  await up?.close();
});

const get = async (path: string, headers: Record<string, string> = {}) => {
  const res = await request(`${dp.proxyUrl}${path}`, { headers });
  await res.body.dump();
  return res;
};

describe('built-in steps run in phase order with the plugins', () => {
  it("appear in the route's chain where they run: redirect, version, the plugins, the version's headers", () => {
    const chain = (name: string) =>
      dp.holder.current!.routes.find((r) => r.id === `route/test/${name}/${name}/0`)!.chain;
    expect(chain('redirect')).toEqual([
      'https-redirect',
      'deprecation',
      'key-auth',
      'response-transformer',
      'deprecation-headers',
      'proxy',
    ]);
    expect(chain('gone')).toEqual(['deprecation', 'key-auth', 'deprecation-headers', 'proxy']);
  });

  it('the redirect answers before any plugin and before the version sets its headers', async () => {
    const seen = up.seen.length;
    const res = await get('/redirect/x?a=1');
    expect(res.statusCode).toBe(308);
    expect(res.headers.location).toMatch(/^https:\/\/127\.0\.0\.1\/redirect\/x\?a=1$/);
    expect(res.headers.deprecation).toBeUndefined();
    expect(up.seen.length).toBe(seen);
  });

  it("a retired version's 410 comes before authentication", async () => {
    const res = await get('/gone');
    expect(res.statusCode).toBe(410);
    expect(res.headers.deprecation).toBe('@1767225600');
  });

  it("a refusal by a plugin carries the version's headers (set before the plugins run)", async () => {
    const res = await get('/dep');
    expect(res.statusCode).toBe(401);
    expect(res.headers.deprecation).toBe('@1767225600');
  });

  it("the version's headers are set after every plugin's response hook: a transformer replacing them finds none", async () => {
    const res = await get('/dep', { 'x-api-key': KEY });
    expect(res.statusCode).toBe(200);
    expect(res.headers.deprecation).toBe('@1767225600');
    expect(res.headers.sunset).toBe('Thu, 31 Dec 2099 23:59:59 GMT');
    expect(res.headers.link).toBe('<https://docs.example.com/v2>; rel="deprecation"');
  });
});
