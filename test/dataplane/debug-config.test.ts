/**
 * GET /debug/config on the admin port: the running snapshot with every Secret value redacted
 * (key-auth key, jwt secret, oidc client secret and cookie key, TLS private key), the hash of
 * the real snapshot, and only with the admin token. The table is the controller's own build of
 * objects that reference Secrets, so the values are where the controller really puts them.
 */
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { build } from '../../controller/build.ts';
import { parseFiles } from '../../controller/source/file.ts';
import type { Snapshot } from '../../dataplane/config/route-table.ts';
import { debugConfigObjects, expectRedacted, SECRET, TLS_HOST } from '../helpers/debug-config.ts';
import type { DataPlane } from '../../dataplane/main.ts';
import { startTestDataPlane, startUpstream, type Upstream } from '../helpers/servers.ts';
import { type Leaf, makePki, type Pki } from '../tls/pki.ts';

let up: Upstream;
let pki: Pki;
let leaf: Leaf;
let snapshot: Snapshot;
let dp: DataPlane;

beforeAll(async () => {
  up = await startUpstream();
  pki = makePki();
  leaf = pki.leaf('site', [TLS_HOST]);
  const text = debugConfigObjects(leaf, up.url);
  const built = build(parseFiles([{ file: 'debug.yaml', text }]).resources);
  expect(built.diagnostics).toEqual([]);
  snapshot = built.snapshot;
  dp = await startTestDataPlane();
});
afterAll(async () => {
  await dp?.close();
  await up?.close();
  pki?.remove();
});

const get = (path: string, token?: string) =>
  request(`${dp.adminUrl}${path}`, token ? { headers: { authorization: `Bearer ${token}` } } : {});

describe('GET /debug/config (data plane)', () => {
  it('answers 503 before any snapshot, then the running one with Secrets redacted and the real hash', async () => {
    expect((await get('/debug/config', 'test-admin-token')).statusCode).toBe(503);
    const put = await request(`${dp.adminUrl}/config`, {
      method: 'PUT',
      body: JSON.stringify(snapshot),
      headers: { 'content-type': 'application/json', authorization: 'Bearer test-admin-token' },
    });
    expect(put.statusCode).toBe(200);

    const res = await get('/debug/config', 'test-admin-token');
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toContain('application/json');
    const text = await res.body.text();
    expectRedacted(text, leaf);
    const { hash } = (await (await get('/config')).body.json()) as { hash: string };
    expect(JSON.parse(text).hash).toBe(hash);
    expect(hash).toBe(snapshot.hash);
  });

  it('needs the admin token', async () => {
    const none = await get('/debug/config');
    expect(none.statusCode).toBe(401);
    expect(none.headers['www-authenticate']).toContain('Bearer');
    expect(((await none.body.json()) as { code: string }).code).toBe('SLC_ERR_UNAUTHORIZED');
    expect((await get('/debug/config', 'wrong-token')).statusCode).toBe(401);
  });

  it('redacts a copy: the running snapshot still checks the real key', async () => {
    expect((await get('/debug/config', 'test-admin-token')).statusCode).toBe(200);
    const keyed = (key: string) => request(`${dp.proxyUrl}/keyed`, { headers: { 'x-api-key': key } });
    expect((await keyed(SECRET.apiKey)).statusCode).toBe(200);
    expect((await keyed('<redacted>')).statusCode).toBe(401);
  });
});
