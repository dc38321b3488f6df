/** The admin API: PUT/GET /config, readiness, metrics, and the last good snapshot across restarts. */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestDataPlane, startUpstream, type Upstream } from '../helpers/servers.ts';
import { route, snapshot, transformer, upstream } from '../helpers/tables.ts';

let up: Upstream;
let stateDir: string;
beforeAll(async () => {
  up = await startUpstream();
  stateDir = await mkdtemp(join(tmpdir(), 'sluice-state-'));
});
afterAll(async () => {
  await up.close();
  await rm(stateDir, { recursive: true, force: true });
});

const put = (adminUrl: string, body: unknown, token = 'test-admin-token') =>
  request(`${adminUrl}/config`, {
    method: 'PUT',
    body: JSON.stringify(body),
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
  });

const v1 = () => snapshot([route('a', 'u', '/a')], [upstream('u', up.url)]);
const v2 = () => snapshot([route('a', 'u', '/a'), route('b', 'u', '/b')], [upstream('u', up.url)]);

describe('admin API', () => {
  it('is not ready and answers 503 problem until a configuration is loaded', async () => {
    const dp = await startTestDataPlane();
    try {
      expect((await request(`${dp.adminUrl}/healthz`)).statusCode).toBe(200);
      const ready = await request(`${dp.adminUrl}/readyz`);
      expect(ready.statusCode).toBe(503);
      expect(ready.headers['content-type']).toContain('application/problem+json');
      const proxied = await request(`${dp.proxyUrl}/a`);
      expect(proxied.statusCode).toBe(503);
      expect(((await proxied.body.json()) as { code: string }).code).toBe('SLC_ERR_NOT_READY');
      expect(await (await request(`${dp.adminUrl}/config`)).body.json()).toEqual({ hash: '' });

      const res = await put(dp.adminUrl, v1());
      expect(res.statusCode).toBe(200);
      expect(await res.body.json()).toEqual({ result: 'applied', hash: v1().hash });
      expect((await request(`${dp.adminUrl}/readyz`)).statusCode).toBe(200);
      expect((await request(`${dp.proxyUrl}/a`)).statusCode).toBe(200);
    } finally {
      await dp.close();
    }
  });

  it('needs the bearer token for PUT /config', async () => {
    const dp = await startTestDataPlane();
    try {
      const none = await request(`${dp.adminUrl}/config`, {
        method: 'PUT',
        body: JSON.stringify(v1()),
        headers: { 'content-type': 'application/json' },
      });
      expect(none.statusCode).toBe(401);
      expect(none.headers['www-authenticate']).toContain('Bearer');
      expect((await put(dp.adminUrl, v1(), 'wrong')).statusCode).toBe(401);
      expect(dp.holder.hash).toBe('');
    } finally {
      await dp.close();
    }
  });

  it('rejects an invalid snapshot with 422 naming route ids and fields, and keeps serving the old one', async () => {
    const dp = await startTestDataPlane({ initialSnapshot: v1() });
    try {
      const bad = v2();
      bad.table.routes[1].handler = { type: 'proxy', upstream: 'upstream/missing' };
      bad.table.routes[1].plugins = [transformer('t', { add: { headers: ['X-Evil:a\r\nInjected: 1'] } })];
      bad.hash = snapshot(bad.table.routes, bad.table.upstreams).hash;
      const res = await put(dp.adminUrl, bad);
      expect(res.statusCode).toBe(422);
      const body = (await res.body.json()) as {
        code: string;
        hash: string;
        errors: { id: string; field: string }[];
      };
      expect(body.code).toBe('SLC_ERR_CONFIG_INVALID');
      expect(body.hash).toBe(v1().hash);
      expect(body.errors).toEqual(
        expect.arrayContaining([
          expect.objectContaining({ id: 'route/test/b/b/0', field: 'handler.upstream' }),
          expect.objectContaining({ id: 'route/test/b/b/0', field: 'plugins[0].config.add.headers[0]' }),
        ]),
      );
      expect(dp.holder.hash).toBe(v1().hash);
      expect((await request(`${dp.proxyUrl}/a`)).statusCode).toBe(200);
      expect((await request(`${dp.proxyUrl}/b`)).statusCode).toBe(404);
    } finally {
      await dp.close();
    }
  });

  it('rejects a snapshot whose hash does not match its table', async () => {
    const dp = await startTestDataPlane({ initialSnapshot: v1() });
    try {
      const res = await put(dp.adminUrl, { hash: 'a'.repeat(64), table: v2().table });
      expect(res.statusCode).toBe(422);
      expect(JSON.stringify(await res.body.json())).toContain('"field":"hash"');
      expect(dp.holder.hash).toBe(v1().hash);
    } finally {
      await dp.close();
    }
  });

  it('answers unchanged for the snapshot it already runs', async () => {
    const dp = await startTestDataPlane({ initialSnapshot: v1() });
    try {
      expect(await (await put(dp.adminUrl, v1())).body.json()).toEqual({
        result: 'unchanged',
        hash: v1().hash,
      });
    } finally {
      await dp.close();
    }
  });

  it('exports request metrics per route id and the config hash', async () => {
    const dp = await startTestDataPlane({ initialSnapshot: v1() });
    try {
      await request(`${dp.proxyUrl}/a/x`).then((r) => r.body.dump());
      await request(`${dp.proxyUrl}/zzz`).then((r) => r.body.dump());
      const text = await (await request(`${dp.adminUrl}/metrics`)).body.text();
      expect(text).toMatch(
        /sluice_requests_total\{route="route\/test\/a\/a\/0",method="GET",status_class="2xx"\} 1/,
      );
      expect(text).toMatch(/sluice_requests_total\{route="\(none\)",method="GET",status_class="4xx"\} 1/);
      expect(text).toContain('sluice_request_duration_seconds_bucket');
      expect(text).toMatch(/sluice_upstream_response_seconds_count\{upstream="u"\} 1/);
      expect(text).toContain(`sluice_config_info{hash="${v1().hash}"} 1`);
    } finally {
      await dp.close();
    }
  });

  it('writes a pushed snapshot to the state dir as the text it came in, not serialized again', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sluice-state-text-'));
    const dp = await startTestDataPlane({ stateDir: dir });
    try {
      // Indented, so a second serialization (compact) would differ from the text pushed.
      const text = JSON.stringify(v2(), null, 3);
      const res = await request(`${dp.adminUrl}/config`, {
        method: 'PUT',
        body: text,
        headers: { 'content-type': 'application/json', authorization: 'Bearer test-admin-token' },
      });
      expect(res.statusCode).toBe(200);
      await dp.close(); // flushes the save
      expect(await readFile(join(dir, 'last-good-snapshot.json'), 'utf8')).toBe(text);
    } finally {
      await dp.close();
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('persists the last good snapshot and serves it after a restart, before any push', async () => {
    const first = await startTestDataPlane({ stateDir });
    await put(first.adminUrl, v2());
    await first.close();
    const second = await startTestDataPlane({ stateDir });
    try {
      expect(second.holder.hash).toBe(v2().hash);
      expect((await request(`${second.proxyUrl}/b`)).statusCode).toBe(200);
      expect((await request(`${second.adminUrl}/readyz`)).statusCode).toBe(200);
    } finally {
      await second.close();
    }
  });
});
