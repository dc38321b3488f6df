/**
 * PUT /config under hostile bodies: nested 10,000 levels deep (where the schema is open, a
 * plugin's config, and where it is closed) or over CONFIG_MAX_BYTES. Each is refused with a
 * problem, counted, and the running snapshot keeps serving. A snapshot without routes is not
 * hostile: the controller pushes one when every GatewayRoute is deleted, and it applies.
 */
import { gzipSync } from 'node:zlib';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CONFIG_MAX_BYTES, CONFIG_MAX_DEPTH } from '../../dataplane/config/limits.ts';
import type { DataPlane } from '../../dataplane/main.ts';
import { readMetric } from '../helpers/processes.ts';
import { startTestDataPlane, startUpstream, type Upstream } from '../helpers/servers.ts';
import { route, snapshot, transformer, upstream } from '../helpers/tables.ts';

let up: Upstream;
let dp: DataPlane;
const v1 = () => snapshot([route('a', 'u', '/a')], [upstream('u', up.url)]);

beforeAll(async () => {
  up = await startUpstream();
  dp = await startTestDataPlane({ initialSnapshot: v1() });
});
afterAll(async () => {
  await dp?.close();
  await up?.close();
});

const put = (body: string | Buffer, encoding?: string) =>
  request(`${dp.adminUrl}/config`, {
    method: 'PUT',
    body,
    headers: {
      'content-type': 'application/json',
      authorization: 'Bearer test-admin-token',
      ...(encoding ? { 'content-encoding': encoding } : {}),
    },
  });
const rejected = () => readMetric(dp.adminUrl, 'sluice_config_loads_total', { result: 'rejected' });
const status = async (path: string) => {
  const r = await request(`${dp.proxyUrl}${path}`);
  await r.body.dump();
  return r.statusCode;
};

describe('PUT /config bounds', () => {
  it('refuses a body nested 10,000 levels deep with 422 naming where, counted; the old snapshot serves', async () => {
    const deep = `${'['.repeat(10_000)}${']'.repeat(10_000)}`;
    const inPlugin = v1();
    inPlugin.table.routes[0].plugins = [transformer('t', { add: { headers: ['X-A:1'] } })];
    const cases = [
      // The open field of the schema (a plugin's config before its own schema checks it)…
      [
        JSON.stringify(inPlugin).replace('"add":', `"deep":${deep},"add":`),
        'table.routes[0].plugins[0].config.deep[0]…',
      ],
      // …and at the root.
      [deep, '[0][0][0][0][0][0][0][0]…'],
    ] as const;
    for (const [body, field] of cases) {
      const before = await rejected();
      const res = await put(body);
      expect(res.statusCode).toBe(422);
      expect(res.headers['content-type']).toContain('application/problem+json');
      const problem = (await res.body.json()) as { code: string; hash: string; errors: unknown[] };
      expect(problem.code).toBe('SLC_ERR_CONFIG_INVALID');
      expect(problem.errors).toEqual([
        { field, message: `nests deeper than ${CONFIG_MAX_DEPTH} levels of objects and arrays` },
      ]);
      expect(problem.hash).toBe(v1().hash);
      expect(await rejected()).toBe(before + 1);
      expect(await status('/a')).toBe(200);
    }
  });

  it('refuses a body over CONFIG_MAX_BYTES with 413 problem+json; the old snapshot serves', async () => {
    const over = `{"hash":"${'0'.repeat(64)}","pad":"${'x'.repeat(CONFIG_MAX_BYTES)}"}`;
    const res = await put(over);
    expect(res.statusCode).toBe(413);
    expect(res.headers['content-type']).toContain('application/problem+json');
    const problem = (await res.body.json()) as { code: string; detail: string };
    expect(problem.code).toBe('SLC_ERR_BODY_TOO_LARGE');
    expect(problem.detail).toContain(`${CONFIG_MAX_BYTES} bytes`);
    expect(dp.holder.hash).toBe(v1().hash);
    expect(await status('/a')).toBe(200);
  });

  it('applies a snapshot without routes after one with routes (the controller deleting every route)', async () => {
    const none = snapshot([], []);
    const res = await put(JSON.stringify(none));
    expect(res.statusCode).toBe(200);
    expect(await res.body.json()).toEqual({ result: 'applied', hash: none.hash });
    expect(await status('/a')).toBe(404);
    expect((await put(JSON.stringify(v1()))).statusCode).toBe(200);
    expect(await status('/a')).toBe(200);
  });

  it('applies a gzipped snapshot (Content-Encoding: gzip, as the controller pushes)', async () => {
    const none = snapshot([], []);
    const res = await put(gzipSync(JSON.stringify(none)), 'gzip');
    expect(res.statusCode).toBe(200);
    expect(await res.body.json()).toEqual({ result: 'applied', hash: none.hash });
    expect(await status('/a')).toBe(404);
    expect((await put(gzipSync(JSON.stringify(v1())), 'gzip')).statusCode).toBe(200);
    expect(await status('/a')).toBe(200);
  });

  it('refuses a gzip body that decodes to more than CONFIG_MAX_BYTES with 413 (a bomb), unread past the limit', async () => {
    const over = `{"hash":"${'0'.repeat(64)}","pad":"${'x'.repeat(CONFIG_MAX_BYTES * 4)}"}`;
    const bomb = gzipSync(over);
    expect(bomb.length).toBeLessThan(CONFIG_MAX_BYTES / 100);
    const res = await put(bomb, 'gzip');
    expect(res.statusCode).toBe(413);
    expect(((await res.body.json()) as { code: string }).code).toBe('SLC_ERR_BODY_TOO_LARGE');
    expect(dp.holder.hash).toBe(v1().hash);
    expect(await status('/a')).toBe(200);
  });

  it('refuses a body that is not gzip under Content-Encoding: gzip with 400, and another coding with 415', async () => {
    const bad = await put(JSON.stringify(v1()), 'gzip');
    expect(bad.statusCode).toBe(400);
    expect(((await bad.body.json()) as { code: string }).code).toBe('SLC_ERR_BAD_REQUEST');
    const br = await put(JSON.stringify(v1()), 'br');
    expect(br.statusCode).toBe(415);
    expect(br.headers['content-type']).toContain('application/problem+json');
    const problem = (await br.body.json()) as { code: string; detail: string };
    expect(problem.code).toBe('SLC_ERR_UNSUPPORTED_ENCODING');
    expect(problem.detail).toContain('br');
    expect(dp.holder.hash).toBe(v1().hash);
    expect(await status('/a')).toBe(200);
  });
});
