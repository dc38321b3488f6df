/**
 * The idempotency plugin end to end (spec §2.1, §3, §4.2, §4.3, §7, §8): a real data plane in
 * front of a real upstream that counts executions per key, with real clients. The whole suite
 * runs twice: on the machine's Redis (a unique key prefix) and on the in-memory store.
 *
 * The upstream reads its behaviour from the query (part of the fingerprint, so it is the same
 * on every retry): delay=ms, status=N, size=N (body bytes), reset=1 (cut the first connection
 * after reading the request), slowbody=1 (headers, then the body 300 ms later), binary=N (N bytes
 * cycling through 0–255, not UTF-8, with two Link header lines).
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DataPlane } from '../../dataplane/main.ts';
import { rawRequest, statusOf } from '../helpers/raw-http.ts';
import { dropPrefix, sharedRedisUrl, uniquePrefix } from '../helpers/redis.ts';
import { freePort, startTestDataPlane, startUpstream, type Upstream } from '../helpers/servers.ts';
import { idempotencyPlugin, pluginInstance, route, snapshot, upstream } from '../helpers/tables.ts';

let up: Upstream;
/** Executions per Idempotency-Key seen by the upstream. */
const executions = new Map<string, number>();

beforeAll(async () => {
  up = await startUpstream((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const key = String(req.headers['idempotency-key'] ?? '');
    const n = (executions.get(key) ?? 0) + 1;
    executions.set(key, n);
    const q = url.searchParams;
    if (q.get('reset') === '1' && n === 1) {
      req.socket.destroy();
      return true;
    }
    const status = Number(q.get('status') ?? 201);
    const binary = q.get('binary');
    if (binary !== null) {
      const bytes = Buffer.alloc(Number(binary), 0).map((_, i) => (i * 7 + n) % 256);
      res.writeHead(status, {
        'content-type': 'application/octet-stream',
        link: ['</a>; rel="a"', '</b>; rel="b"'],
        'x-custom': 'kept',
      });
      res.end(bytes);
      return true;
    }
    const size = q.get('size');
    const body = size
      ? 'x'.repeat(Number(size))
      : JSON.stringify({
          id: `ch_${randomUUID().slice(0, 8)}`,
          execution: n,
          method: req.method,
          path: url.pathname,
        });
    const send = () => {
      res.writeHead(status, {
        'content-type': 'application/json',
        location: `/charges/${n}`,
        etag: `"v${n}"`,
        'x-custom': 'kept',
        'set-cookie': 'session=secret',
      });
      if (q.get('slowbody') === '1') {
        res.write(body.slice(0, 10));
        setTimeout(() => res.end(body.slice(10)), 300).unref();
      } else res.end(body);
    };
    const delay = Number(q.get('delay') ?? 0);
    if (delay) setTimeout(send, delay).unref();
    else send();
    return true;
  });
});
afterAll(() => up.close());

const count = (key: string) => executions.get(key) ?? 0;
const key = () => `k-${randomUUID()}`;

describe.each(['redis', 'memory'] as const)('idempotency plugin on the %s store', (kind) => {
  let dp: DataPlane;
  const prefix = uniquePrefix('plugin');

  beforeAll(async () => {
    const dead = await freePort();
    const idem = idempotencyPlugin('idem');
    const asyncIdem = idempotencyPlugin('async', { async: { enabled: true, operationsPath: '/operations' } });
    dp = await startTestDataPlane({
      maxBodyBytes: 64 * 1024,
      ...(kind === 'redis' ? { redisUrl: sharedRedisUrl, redisPrefix: prefix } : {}),
      initialSnapshot: snapshot(
        [
          route('charges', 'up', '/charges', { plugins: [idem] }),
          route('wait', 'up', '/wait', {
            plugins: [idempotencyPlugin('wait', { inProgress: { mode: 'wait', wait: '3s' } })],
          }),
          route('required', 'up', '/required', {
            plugins: [idempotencyPlugin('required', { required: true })],
          }),
          route('short', 'up', '/short', {
            plugins: [idempotencyPlugin('short', { ttl: '1s', lease: '300ms' })],
          }),
          route('long', 'up', '/long', { plugins: [idempotencyPlugin('long', { lease: '600ms' })] }),
          route('cap', 'up', '/cap', { plugins: [idempotencyPlugin('cap', { maxResponseBytes: 100 })] }),
          route('tenant', 'up', '/tenant', {
            plugins: [
              idempotencyPlugin('tenant', {
                fingerprint: { headers: ['X-Tenant'] },
                methods: ['POST', 'PUT'],
              }),
            ],
          }),
          route('cors', 'up', '/cors', {
            plugins: [pluginInstance('cors', 'cors', { origins: ['https://app.example'] }), idem],
          }),
          route('async', 'up', '/async', { plugins: [asyncIdem] }),
          route('operations', 'up', '/operations', { plugins: [asyncIdem] }),
          route('dead', 'dead', '/dead', { plugins: [idem] }),
        ],
        [upstream('up', up.url), upstream('dead', `http://127.0.0.1:${dead}`, { connectMs: 500 })],
      ),
    });
  });
  afterAll(async () => {
    await dp.close();
    if (kind === 'redis') await dropPrefix(sharedRedisUrl, prefix);
  });

  const send = (
    path: string,
    opts: {
      key?: string;
      auth?: string | null;
      body?: string;
      method?: string;
      headers?: Record<string, string>;
    } = {},
  ) =>
    request(`${dp.proxyUrl}${path}`, {
      method: (opts.method ?? 'POST') as 'POST',
      headers: {
        'content-type': 'application/json',
        ...(opts.auth === null ? {} : { authorization: opts.auth ?? 'Bearer alice' }),
        ...(opts.key ? { 'idempotency-key': opts.key } : {}),
        ...opts.headers,
      },
      body: opts.method === 'GET' ? undefined : (opts.body ?? '{"amount":100,"currency":"EUR"}'),
    });
  const text = async (res: Awaited<ReturnType<typeof send>>) => ({
    status: res.statusCode,
    headers: res.headers,
    body: await res.body.text(),
  });
  const code = (r: { body: string }) => (JSON.parse(r.body) as { code: string }).code;
  const metric = async (outcome: string, routeName: string) => {
    const m = await (await request(`${dp.adminUrl}/metrics`)).body.text();
    const line = m
      .split('\n')
      .find((l) =>
        l.startsWith(
          `sluice_idempotency_requests_total{route="route/test/${routeName}/${routeName}/0",outcome="${outcome}"}`,
        ),
      );
    return line ? Number(line.split(' ').pop()) : 0;
  };

  describe('no record → execute; COMPLETED + same request → replay', () => {
    it('executes once, forwards the key, and replays status, body and headers that matter', async () => {
      const k = key();
      const first = await text(await send('/charges', { key: k }));
      expect(first.status).toBe(201);
      expect(first.headers['idempotent-replayed']).toBeUndefined();
      expect(up.seen.at(-1)?.headers['idempotency-key']).toBe(k);
      const again = await text(await send('/charges', { key: k }));
      expect(again.status).toBe(201);
      expect(again.body).toBe(first.body);
      expect(again.headers['idempotent-replayed']).toBe('true');
      expect(again.headers['content-type']).toBe('application/json');
      expect(again.headers.location).toBe(first.headers.location);
      expect(again.headers.etag).toBe(first.headers.etag);
      expect(again.headers['x-custom']).toBe('kept');
      expect(again.headers['set-cookie']).toBeUndefined();
      expect(again.headers['x-request-id']).not.toBe(first.headers['x-request-id']);
      expect(count(k)).toBe(1);
    });

    it('JSON bodies that differ only in key order and spacing are the same request', async () => {
      const k = key();
      await send('/charges', { key: k, body: '{"amount":100,"currency":"EUR"}' }).then(text);
      const again = await text(
        await send('/charges', { key: k, body: '{ "currency" : "EUR",\n "amount": 100 }' }),
      );
      expect(again.headers['idempotent-replayed']).toBe('true');
      expect(count(k)).toBe(1);
    });

    it('error responses from the upstream are stored and replayed like successes (4xx and 5xx)', async () => {
      for (const status of [400, 500]) {
        const k = key();
        const first = await text(await send(`/charges?status=${status}`, { key: k }));
        const again = await text(await send(`/charges?status=${status}`, { key: k }));
        expect([first.status, again.status]).toEqual([status, status]);
        expect(again.body).toBe(first.body);
        expect(again.headers['idempotent-replayed']).toBe('true');
        expect(count(k)).toBe(1);
      }
    });

    it('the record is complete before the client has the response: an immediate retry replays', async () => {
      const k = key();
      const first = await text(await send('/charges?slowbody=1', { key: k }));
      const again = await text(await send('/charges?slowbody=1', { key: k }));
      expect(again.headers['idempotent-replayed']).toBe('true');
      expect(again.body).toBe(first.body);
    });

    // A replay reads the record in the claim's one round trip and writes head and body at once
    // (a latin1 string up to 16 KiB, a Buffer above): the bytes and header lines are the stored ones.
    it.each([
      ['a small body (written with the head)', 300],
      ['a body over 16 KiB (written as a Buffer)', 40_000],
    ])('replays %s byte for byte, with repeated header lines kept', async (_what, n) => {
      const k = key();
      const bytes = async (res: Awaited<ReturnType<typeof send>>) => ({
        status: res.statusCode,
        headers: res.headers,
        body: Buffer.from(await res.body.arrayBuffer()),
      });
      const first = await bytes(await send(`/charges?binary=${n}`, { key: k }));
      expect(first.body).toHaveLength(n);
      expect(first.body.toString('utf8')).not.toBe(first.body.toString('latin1'));
      const again = await bytes(await send(`/charges?binary=${n}`, { key: k }));
      expect(again.status).toBe(201);
      expect(again.headers['idempotent-replayed']).toBe('true');
      expect(again.body.equals(first.body)).toBe(true);
      expect(again.headers['content-length']).toBe(String(n));
      expect(again.headers.link).toEqual(['</a>; rel="a"', '</b>; rel="b"']);
      expect(again.headers['content-type']).toBe('application/octet-stream');
      expect(count(k)).toBe(1);
      // Another body under the key is still refused, after replays as before them.
      expect((await send(`/charges?binary=${n}`, { key: k, body: '{"amount":1}' })).statusCode).toBe(422);
    });

    it('a replay keeps the headers set before it (CORS) and every stored header line', async () => {
      const k = key();
      const origin = { origin: 'https://app.example' };
      const first = await send('/cors?binary=10', { key: k, headers: origin });
      await first.body.arrayBuffer();
      const again = await send('/cors?binary=10', { key: k, headers: origin });
      const body = Buffer.from(await again.body.arrayBuffer());
      expect(again.headers['idempotent-replayed']).toBe('true');
      expect(again.headers['access-control-allow-origin']).toBe('https://app.example');
      expect(again.headers.link).toEqual(['</a>; rel="a"', '</b>; rel="b"']);
      expect(again.headers['x-custom']).toBe('kept');
      expect(body).toHaveLength(10);
      expect(count(k)).toBe(1);
    });

    it('a client that leaves mid-response still gets the whole response replayed on retry', async () => {
      const k = key();
      const res = await send('/charges?slowbody=1', { key: k });
      expect(res.statusCode).toBe(201);
      res.body.destroy();
      await sleep(500);
      const again = await text(await send('/charges?slowbody=1', { key: k }));
      expect(again.headers['idempotent-replayed']).toBe('true');
      expect((JSON.parse(again.body) as { execution: number }).execution).toBe(1);
      expect(count(k)).toBe(1);
    });
  });

  describe('a different request under the same key → 422, nothing runs', () => {
    it.each([
      ['body', { body: '{"amount":200,"currency":"EUR"}' }, '/charges'],
      ['path', {}, '/charges/other'],
      ['query', {}, '/charges?x=1'],
      ['User-Agent (a header the spec names)', { headers: { 'user-agent': 'other-client/2' } }, '/charges'],
    ])('differing in %s', async (_what, change, path) => {
      const k = key();
      await send('/charges', { key: k }).then(text);
      const other = await text(await send(path, { key: k, ...change }));
      expect(other.status).toBe(422);
      expect(other.headers['content-type']).toBe('application/problem+json');
      expect(code(other)).toBe('SLC_ERR_IDEMPOTENCY_KEY_REUSED');
      expect(count(k)).toBe(1);
      // And it stays 422 while the record exists (spec §7 rule 1); the original still replays.
      expect((await send(path, { key: k, ...change }).then(text)).status).toBe(422);
      expect((await send('/charges', { key: k }).then(text)).headers['idempotent-replayed']).toBe('true');
    });

    it('while the first is still IN_PROGRESS too', async () => {
      const k = key();
      const first = send('/charges?delay=400', { key: k }).then(text);
      await sleep(100);
      const other = await text(
        await send('/charges?delay=400', { key: k, body: '{"amount":1,"currency":"EUR"}' }),
      );
      expect(other.status).toBe(422);
      expect((await first).status).toBe(201);
      expect(count(k)).toBe(1);
    });

    it('headers listed in fingerprint.headers count; others do not', async () => {
      const k = key();
      await send('/tenant', { key: k, headers: { 'x-tenant': 'a', 'user-agent': 'one' } }).then(text);
      const otherAgent = await text(
        await send('/tenant', { key: k, headers: { 'x-tenant': 'a', 'user-agent': 'two' } }),
      );
      expect(otherAgent.headers['idempotent-replayed']).toBe('true');
      const otherTenant = await text(await send('/tenant', { key: k, headers: { 'x-tenant': 'b' } }));
      expect(otherTenant.status).toBe(422);
    });

    it('a JSON body with a duplicate key is refused with 400 and leaves no record', async () => {
      const k = key();
      const dup = await text(
        await send('/charges', { key: k, body: '{"amount":100,"amount":1,"currency":"EUR"}' }),
      );
      expect(dup.status).toBe(400);
      expect(code(dup)).toBe('SLC_ERR_JSON_DUPLICATE_KEY');
      expect(count(k)).toBe(0);
      const ok = await text(await send('/charges', { key: k }));
      expect(ok.status).toBe(201);
      expect(ok.headers['idempotent-replayed']).toBeUndefined();
    });
  });

  describe('IN_PROGRESS + same request', () => {
    it('answers 409 with Retry-After; once complete, the retry replays', async () => {
      const k = key();
      const first = send('/charges?delay=400', { key: k }).then(text);
      await sleep(100);
      const busy = await text(await send('/charges?delay=400', { key: k }));
      expect(busy.status).toBe(409);
      expect(code(busy)).toBe('SLC_ERR_IDEMPOTENCY_IN_PROGRESS');
      expect(busy.headers['retry-after']).toBe('1');
      const done = await first;
      const later = await text(await send('/charges?delay=400', { key: k }));
      expect(later.body).toBe(done.body);
      expect(later.headers['idempotent-replayed']).toBe('true');
      expect(count(k)).toBe(1);
    });

    it('an execution four times longer than its lease keeps it: every retry meanwhile is 409, none takes over', async () => {
      const k = key();
      const before = await metric('takeover', 'long');
      const started = performance.now();
      const first = send('/long?delay=2400', { key: k }).then(text);
      const busy: number[] = [];
      for (const at of [300, 900, 1_500, 2_100]) {
        await sleep(Math.max(at - (performance.now() - started), 0));
        busy.push((await text(await send('/long?delay=2400', { key: k }))).status);
      }
      expect(busy).toEqual([409, 409, 409, 409]);
      const done = await first;
      expect(done.status).toBe(201);
      const later = await text(await send('/long?delay=2400', { key: k }));
      expect(later.headers['idempotent-replayed']).toBe('true');
      expect(later.body).toBe(done.body);
      expect(count(k)).toBe(1);
      expect(await metric('takeover', 'long')).toBe(before);
    });

    it('with inProgress.mode wait, waits for the first and replays its response', async () => {
      const k = key();
      const first = send('/wait?delay=500', { key: k }).then(text);
      await sleep(100);
      const waited = await text(await send('/wait?delay=500', { key: k }));
      expect(waited.status).toBe(201);
      expect(waited.headers['idempotent-replayed']).toBe('true');
      expect(waited.body).toBe((await first).body);
      expect(count(k)).toBe(1);
    });

    it('of 20 concurrent copies exactly one executes; the others get 409 or the replay', async () => {
      const k = key();
      const all = await Promise.all(
        Array.from({ length: 20 }, () => send('/charges?delay=50', { key: k }).then(text)),
      );
      expect(count(k)).toBe(1);
      const executed = all.filter((r) => r.status === 201 && r.headers['idempotent-replayed'] === undefined);
      expect(executed).toHaveLength(1);
      for (const r of all) {
        if (r.status === 201) expect(r.body).toBe(executed[0].body);
        else expect([r.status, code(r)]).toEqual([409, 'SLC_ERR_IDEMPOTENCY_IN_PROGRESS']);
      }
    });
  });

  describe('failures', () => {
    it('connection refused (nothing reached the upstream) leaves no record: a retry executes again', async () => {
      const k = key();
      const before = await metric('executed', 'dead');
      expect((await send('/dead', { key: k }).then(text)).status).toBe(502);
      const retry = await text(await send('/dead', { key: k }));
      expect(retry.status).toBe(502);
      expect(code(retry)).toBe('SLC_ERR_UPSTREAM_UNAVAILABLE');
      expect((await metric('executed', 'dead')) - before).toBe(2);
    });

    it('a cut connection (may have executed) keeps the key IN_PROGRESS until the lease lapses, then one retry takes over', async () => {
      const k = key();
      const first = await text(await send('/short?reset=1', { key: k }));
      expect(first.status).toBe(502);
      const busy = await text(await send('/short?reset=1', { key: k }));
      expect(busy.status).toBe(409);
      await sleep(450);
      const taken = await text(await send('/short?reset=1', { key: k }));
      expect(taken.status).toBe(201);
      expect(taken.headers['idempotent-replayed']).toBeUndefined();
      expect(count(k)).toBe(2);
      expect(up.seen.filter((s) => s.headers['idempotency-key'] === k)).toHaveLength(2);
      expect(await metric('takeover', 'short')).toBeGreaterThanOrEqual(1);
    });

    it('after the TTL the key is a fresh request again', async () => {
      const k = key();
      await send('/short', { key: k }).then(text);
      expect((await send('/short', { key: k }).then(text)).headers['idempotent-replayed']).toBe('true');
      await sleep(1_100);
      const fresh = await text(await send('/short', { key: k }));
      expect(fresh.status).toBe(201);
      expect(fresh.headers['idempotent-replayed']).toBeUndefined();
      expect(count(k)).toBe(2);
    });

    it('a response over maxResponseBytes reaches the client whole; a replay has its status and headers, no partial body', async () => {
      const k = key();
      const first = await text(await send('/cap?size=5000', { key: k }));
      expect(first.body).toHaveLength(5000);
      const again = await text(await send('/cap?size=5000', { key: k }));
      expect(again.status).toBe(201);
      expect(again.body).toBe('');
      expect(again.headers['x-sluice-replay-body']).toBe('omitted');
      expect(again.headers['idempotent-replayed']).toBe('true');
      expect(again.headers.location).toBe(first.headers.location);
      expect(count(k)).toBe(1);
    });
  });

  describe('keys and callers', () => {
    it.each([
      ['too short', 'short-key'],
      ['too long', 'k'.repeat(65)],
      ['with a space', 'abc def ghijklmnopqrstuvwxyz0123456789'],
      ['with a comma', `a,${'b'.repeat(40)}`],
      ['an unterminated quoted string', `"${'c'.repeat(40)}`],
    ])('a key %s is refused with 400 before anything runs', async (_what, bad) => {
      const r = await text(await send('/charges', { key: bad }));
      expect(r.status).toBe(400);
      expect(code(r)).toBe('SLC_ERR_IDEMPOTENCY_KEY_INVALID');
      expect(count(bad)).toBe(0);
    });

    it('non-ASCII and two Idempotency-Key lines are refused with 400', async () => {
      const k = key();
      const twice = await rawRequest(
        dp.proxyUrl,
        `POST /charges HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer alice\r\nIdempotency-Key: ${k}\r\nIdempotency-Key: ${k}\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}`,
      );
      expect(statusOf(twice)).toBe(400);
      expect(twice).toContain('SLC_ERR_IDEMPOTENCY_KEY_INVALID');
      const accented = await rawRequest(
        dp.proxyUrl,
        `POST /charges HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer alice\r\nIdempotency-Key: ${k}\u00e9\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}`,
      );
      expect(statusOf(accented)).toBe(400);
      expect(count(k)).toBe(0);
    });

    it('a quoted structured-field string is the same key as its bare form', async () => {
      const k = key();
      await send('/charges', { key: k }).then(text);
      const quoted = await text(await send('/charges', { key: `"${k}"` }));
      expect(quoted.headers['idempotent-replayed']).toBe('true');
    });

    it('keys are scoped to the caller: the same key from two callers runs twice, one record each', async () => {
      const k = key();
      const alice = await text(await send('/charges', { key: k, auth: 'Bearer alice' }));
      const bob = await text(await send('/charges', { key: k, auth: 'Bearer bob' }));
      expect([alice.status, bob.status]).toEqual([201, 201]);
      expect(bob.headers['idempotent-replayed']).toBeUndefined();
      expect(bob.body).not.toBe(alice.body);
      expect(count(k)).toBe(2);
    });

    it('callers taking turns on one keep-alive connection keep their own records', async () => {
      const k = key();
      const one = new Client(dp.proxyUrl, { pipelining: 1 });
      try {
        const post = async (auth: string) => {
          const r = await one.request({
            path: '/charges',
            method: 'POST',
            headers: { 'content-type': 'application/json', authorization: auth, 'idempotency-key': k },
            body: '{"amount":1}',
          });
          return { replayed: r.headers['idempotent-replayed'], body: await r.body.text() };
        };
        const alice = await post('Bearer alice');
        const bob = await post('Bearer bob');
        const aliceAgain = await post('Bearer alice');
        const carol = await post('Bearer carol');
        expect([alice.replayed, bob.replayed, aliceAgain.replayed, carol.replayed]).toEqual([
          undefined,
          undefined,
          'true',
          undefined,
        ]);
        expect(aliceAgain.body).toBe(alice.body);
        expect(count(k)).toBe(3);
      } finally {
        await one.close();
      }
    });

    it('a key without any caller identity gets 401 and runs nothing', async () => {
      const k = key();
      const r = await text(await send('/charges', { key: k, auth: null }));
      expect(r.status).toBe(401);
      expect(code(r)).toBe('SLC_ERR_IDENTITY_REQUIRED');
      expect(count(k)).toBe(0);
    });

    it('without a key the request passes through (each one runs), unless the route requires one', async () => {
      const before = up.seen.length;
      await send('/charges').then(text);
      await send('/charges').then(text);
      expect(up.seen.length - before).toBe(2);
      const missing = await text(await send('/required'));
      expect(missing.status).toBe(400);
      expect(code(missing)).toBe('SLC_ERR_IDEMPOTENCY_KEY_MISSING');
      expect(up.seen.length - before).toBe(2);
    });

    it('methods outside the list pass through untouched, key or not (GET, PUT on a POST/PATCH route)', async () => {
      const k = key();
      for (const method of ['GET', 'GET', 'PUT', 'PUT'])
        await send('/charges', { key: k, method }).then(text);
      expect(count(k)).toBe(4);
      // PATCH is in the default list.
      await send('/charges', { key: k, method: 'PATCH' }).then(text);
      const patch = await text(await send('/charges', { key: k, method: 'PATCH' }));
      expect(patch.headers['idempotent-replayed']).toBe('true');
      expect(count(k)).toBe(5);
    });
  });

  describe('asynchronous operations (spec §4.3)', () => {
    it('202 with the key as operation id; lookups and retries see 202, then the stored response', async () => {
      const k = key();
      const accepted = await text(await send('/async?delay=400', { key: k }));
      expect(accepted.status).toBe(202);
      expect(accepted.headers.location).toBe(`/operations/${k}`);
      expect(JSON.parse(accepted.body)).toMatchObject({ operationId: k, status: 'IN_PROGRESS' });
      const lookup = await text(await send(`/operations/${k}`, { method: 'GET' }));
      expect(lookup.status).toBe(202);
      expect(lookup.headers['retry-after']).toBe('1');
      expect((await send('/async?delay=400', { key: k }).then(text)).status).toBe(202);
      await sleep(700);
      const done = await text(await send(`/operations/${k}`, { method: 'GET' }));
      expect(done.status).toBe(201);
      expect(JSON.parse(done.body)).toMatchObject({ execution: 1, path: '/async' });
      const retry = await text(await send('/async?delay=400', { key: k }));
      expect(retry.status).toBe(201);
      expect(retry.body).toBe(done.body);
      expect(retry.headers['idempotent-replayed']).toBe('true');
      expect(count(k)).toBe(1);
    });

    it('only the same caller can look an operation up', async () => {
      const k = key();
      await send('/async', { key: k }).then(text);
      await sleep(200);
      expect((await send(`/operations/${k}`, { method: 'GET' }).then(text)).status).toBe(201);
      const bob = await text(await send(`/operations/${k}`, { method: 'GET', auth: 'Bearer bob' }));
      expect([bob.status, code(bob)]).toEqual([404, 'SLC_ERR_OPERATION_NOT_FOUND']);
      const nobody = await text(await send(`/operations/${k}`, { method: 'GET', auth: null }));
      expect(nobody.status).toBe(401);
      expect((await send(`/operations/${key()}`, { method: 'GET' }).then(text)).status).toBe(404);
    });
  });

  it('counts outcomes per route', async () => {
    expect(await metric('executed', 'charges')).toBeGreaterThan(5);
    expect(await metric('replayed', 'charges')).toBeGreaterThan(5);
    expect(await metric('mismatch', 'charges')).toBeGreaterThan(3);
    expect(await metric('conflict', 'charges')).toBeGreaterThan(1);
    expect(await metric('rejected_key', 'charges')).toBeGreaterThan(3);
  });
});
