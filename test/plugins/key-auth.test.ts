/**
 * key-auth in a data plane: missing or wrong keys are 401 with WWW-Authenticate and reach
 * nothing; a good key makes the consumer the identity (idempotency records are the
 * consumer's, whichever of its keys it presents) and is never forwarded upstream or logged.
 */
import { createHash, randomUUID } from 'node:crypto';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DataPlane } from '../../dataplane/main.ts';
import { capturedLog, startTestDataPlane, startUpstream, type Upstream } from '../helpers/servers.ts';
import { idempotencyPlugin, route, snapshot, upstream } from '../helpers/tables.ts';

const sha = (s: string) => createHash('sha256').update(s).digest('hex');
const keyAuth = (config: Record<string, unknown>) => ({
  id: 'plugin/test/keys',
  name: 'key-auth' as const,
  config: {
    consumers: [
      { name: 'alice', secretKeyRef: { name: 'k', key: 'a1' }, sha256: sha('alice-key-1') },
      { name: 'alice', secretKeyRef: { name: 'k', key: 'a2' }, sha256: sha('alice-key-2') },
      { name: 'bob', secretKeyRef: { name: 'k', key: 'b' }, sha256: sha('bob-key') },
    ],
    ...config,
  },
  source: { kind: 'GatewayPlugin', namespace: 'test', name: 'keys', generation: 1 },
});

let up: Upstream;
let dp: DataPlane;
const captured = capturedLog();
beforeAll(async () => {
  up = await startUpstream();
  dp = await startTestDataPlane({
    accessLog: true,
    log: captured.log,
    initialSnapshot: snapshot(
      [
        route('h', 'u', '/h', {
          plugins: [keyAuth({ consumerHeader: 'X-Consumer' }), idempotencyPlugin('idem')],
        }),
        route('q', 'u', '/q', { plugins: [keyAuth({ in: 'query', keyNames: ['apikey'] })] }),
      ],
      [upstream('u', up.url)],
    ),
  });
});
afterAll(async () => {
  await dp.close();
  await up.close();
});

const call = async (path: string, headers: Record<string, string> = {}, method = 'GET', body?: string) => {
  const r = await request(`${dp.proxyUrl}${path}`, { method: method as 'GET', headers, body });
  return { status: r.statusCode, headers: r.headers, body: await r.body.text() };
};

describe('key-auth', () => {
  it('a missing key is 401 with WWW-Authenticate; nothing reaches the upstream', async () => {
    const n = up.seen.length;
    const r = await call('/h');
    expect(r.status).toBe(401);
    expect(r.headers['www-authenticate']).toBe('ApiKey realm="sluice"');
    expect(JSON.parse(r.body).code).toBe('SLC_ERR_CREDENTIALS_MISSING');
    expect(up.seen.length).toBe(n);
  });

  it('a wrong key is 401 and the problem says nothing about the keys', async () => {
    const r = await call('/h', { 'x-api-key': 'alice-key-X' });
    expect(r.status).toBe(401);
    expect(JSON.parse(r.body).code).toBe('SLC_ERR_CREDENTIALS_INVALID');
    expect(r.body).not.toContain('alice');
  });

  it('a good key passes; the key is not forwarded; the consumer header is set and cannot be forged', async () => {
    const r = await call('/h', { 'x-api-key': 'bob-key', 'x-consumer': 'alice' });
    expect(r.status).toBe(200);
    const seen = up.seen.at(-1)!;
    expect(seen.headers['x-api-key']).toBeUndefined();
    expect(seen.headers['x-consumer']).toBe('bob');
    const forged = await call('/h', { 'x-consumer': 'alice' });
    expect(forged.status).toBe(401);
  });

  it('a key in the query is read and removed from what is forwarded', async () => {
    const r = await call('/q/items?a=1&apikey=alice-key-1&b=2');
    expect(r.status).toBe(200);
    expect(up.seen.at(-1)!.url).toBe('/q/items?a=1&b=2');
    expect((await call('/q/items?apikey=nope')).status).toBe(401);
  });

  it('idempotency records belong to the consumer: its two keys share them, another consumer does not', async () => {
    const key = `k-${randomUUID()}`;
    const post = (apiKey: string) =>
      call(
        '/h',
        { 'x-api-key': apiKey, 'idempotency-key': key, 'content-type': 'application/json' },
        'POST',
        '{"a":1}',
      );
    const first = await post('alice-key-1');
    const second = await post('alice-key-2');
    const bob = await post('bob-key');
    expect([first.status, second.status, bob.status]).toEqual([200, 200, 200]);
    expect(second.headers['idempotent-replayed']).toBe('true');
    expect(second.body).toBe(first.body);
    expect(bob.headers['idempotent-replayed']).toBeUndefined();
  });

  it('no key ever appears in the logs', async () => {
    await dp.log.flush?.();
    await new Promise((r) => setTimeout(r, 100));
    const text = captured.text();
    expect(text).toContain('"route":"route/test/h/h/0"');
    for (const k of ['alice-key-1', 'alice-key-2', 'bob-key', 'alice-key-X']) expect(text).not.toContain(k);
  });
});
