/**
 * Retries, the retry budget, the circuit breaker and the request deadline, against upstreams
 * that fail on purpose (by query: fail=N answers 503 to the first N requests of a test id;
 * always=500; slow=ms). Retries: only where the method (or an idempotency key, or the backend)
 * makes them safe, never for a POST that reached the upstream.
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Upstream as TableUpstream } from '../../dataplane/config/route-table.ts';
import type { DataPlane } from '../../dataplane/main.ts';
import { freePort, startTestDataPlane, startUpstream, type Upstream } from '../helpers/servers.ts';
import { idempotencyPlugin, route, snapshot, upstream } from '../helpers/tables.ts';

let up: Upstream;
let dp: DataPlane;
const hits = new Map<string, number>();
const retries = {
  attempts: 2,
  statuses: [502, 503, 504],
  backoffBaseMs: 5,
  backoffMaxMs: 20,
  budgetPercent: 100,
  minRetriesPerSecond: 10,
  idempotentBackend: false,
};
const breaker = { errorPercent: 50, minRequests: 4, windowMs: 10_000, openMs: 300, halfOpenRequests: 1 };

beforeAll(async () => {
  up = await startUpstream((req, res) => {
    const q = new URL(req.url ?? '/', 'http://x').searchParams;
    const id = q.get('id') ?? '';
    const n = (hits.get(id) ?? 0) + 1;
    hits.set(id, n);
    if (q.get('always')) res.writeHead(Number(q.get('always'))).end('down');
    else if (n <= Number(q.get('fail') ?? 0)) res.writeHead(503).end('busy');
    else if (q.get('slow')) setTimeout(() => res.writeHead(200).end('late'), Number(q.get('slow'))).unref();
    else if (q.get('status')) res.writeHead(Number(q.get('status'))).end('s');
    else res.writeHead(200).end(`ok after ${n}`);
    return true;
  });
  const dead = await freePort();
  const u = (id: string, url: string, extra: Partial<TableUpstream> = {}): TableUpstream => ({
    ...upstream(id, url),
    ...extra,
  });
  dp = await startTestDataPlane({
    initialSnapshot: snapshot(
      [
        route('retry', 'retry', '/retry'),
        route('retry2', 'retry2', '/retry2'),
        route('retryidem', 'retryidem', '/idem', { plugins: [idempotencyPlugin('idem')] }),
        route('backend', 'backend', '/backend'),
        route('dead', 'dead', '/dead', { plugins: [idempotencyPlugin('idem2')] }),
        route('deaddl', 'deaddl', '/deaddl', { plugins: [idempotencyPlugin('idem3')] }),
        route('tight', 'tight', '/tight'),
        route('breaker', 'breaker', '/breaker'),
        route('deadline', 'deadline', '/deadline'),
      ],
      [
        u('retry', up.url, { retries }),
        u('retry2', up.url, { retries }),
        u('retryidem', up.url, { retries }),
        u('backend', up.url, { retries: { ...retries, idempotentBackend: true } }),
        u('dead', `http://127.0.0.1:${dead}`, { retries }),
        u('deaddl', `http://127.0.0.1:${dead}`, {
          // Backoff up to 1 s against a 50 ms deadline: the deadline, not the retry budget, ends the tries.
          timeouts: { connectMs: 1000, responseMs: 10_000, idleMs: 10_000, requestMs: 50 },
          retries: { ...retries, attempts: 10, backoffBaseMs: 1000, backoffMaxMs: 1000 },
        }),
        u('tight', up.url, {
          retries: { ...retries, attempts: 1, budgetPercent: 0, minRetriesPerSecond: 1 },
        }),
        u('breaker', up.url, { breaker }),
        u('deadline', up.url, {
          timeouts: { connectMs: 1000, responseMs: 10_000, idleMs: 10_000, requestMs: 300 },
          retries,
        }),
      ],
    ),
  });
});
afterAll(async () => {
  await dp.close();
  await up.close();
});

const call = async (
  path: string,
  opts: { method?: string; headers?: Record<string, string>; body?: string } = {},
) => {
  const r = await request(`${dp.proxyUrl}${path}`, {
    method: (opts.method ?? 'GET') as 'GET',
    headers: opts.headers,
    body: opts.body,
  });
  const text = await r.body.text();
  return {
    status: r.statusCode,
    text,
    code: r.headers['content-type'] === 'application/problem+json' ? JSON.parse(text).code : undefined,
  };
};
const metric = async (name: string, labels: string) => {
  const text = await (await request(`${dp.adminUrl}/metrics`)).body.text();
  const line = text.split('\n').find((l) => l.startsWith(`${name}{${labels}}`));
  return line ? Number(line.split(' ').pop()) : 0;
};

describe('retries', () => {
  it('a GET that meets 503 twice is retried and the client sees only the success', async () => {
    const id = randomUUID();
    const r = await call(`/retry?id=${id}&fail=2`);
    expect([r.status, r.text]).toEqual([200, 'ok after 3']);
    expect(hits.get(id)).toBe(3);
  });

  it('gives up after the configured attempts and passes the last answer through', async () => {
    const id = randomUUID();
    // Its own upstream: a fresh retry budget (the reserve of 10 a second, 100 per window).
    const r = await call(`/retry2?id=${id}&fail=9`);
    expect([r.status, r.text]).toEqual([503, 'busy']);
    expect(hits.get(id)).toBe(3);
  });

  it('does not retry statuses outside the list (a repeated DELETE that answers 404 is not an error)', async () => {
    const id = randomUUID();
    expect((await call(`/retry?id=${id}&status=404`, { method: 'DELETE' })).status).toBe(404);
    expect((await call(`/retry?id=${id}&status=500`)).status).toBe(500);
    expect(hits.get(id)).toBe(2);
  });

  it('a POST without a key that reached the upstream is never retried', async () => {
    const id = randomUUID();
    const r = await call(`/retry?id=${id}&fail=1`, {
      method: 'POST',
      body: '{}',
      headers: { 'content-type': 'application/json' },
    });
    expect(r.status).toBe(503);
    expect(hits.get(id)).toBe(1);
  });

  it('nor is a POST under an idempotency key once it reached the upstream', async () => {
    const id = randomUUID();
    const r = await call(`/idem?id=${id}&fail=1`, {
      method: 'POST',
      body: '{}',
      headers: {
        'content-type': 'application/json',
        authorization: 'Bearer a',
        'idempotency-key': `k-${randomUUID()}`,
      },
    });
    expect(r.status).toBe(503);
    expect(hits.get(id)).toBe(1);
  });

  it('a POST under an idempotency key whose connection was refused (never sent) is retried', async () => {
    const before = await metric('sluice_upstream_retries_total', 'upstream="dead",reason="connect"');
    const r = await call('/dead', {
      method: 'POST',
      body: '{}',
      headers: {
        'content-type': 'application/json',
        authorization: 'Bearer a',
        'idempotency-key': `k-${randomUUID()}`,
      },
    });
    expect([r.status, r.code]).toEqual([502, 'SLC_ERR_UPSTREAM_UNAVAILABLE']);
    expect((await metric('sluice_upstream_retries_total', 'upstream="dead",reason="connect"')) - before).toBe(
      2,
    );
    // Without a key, the same POST is not retried even though nothing was sent.
    const noKey = await call('/dead', { method: 'POST', body: '{}' });
    expect(noKey.status).toBe(502);
    expect((await metric('sluice_upstream_retries_total', 'upstream="dead",reason="connect"')) - before).toBe(
      2,
    );
  });

  it('a keyed POST whose tries (never sent) run out of time leaves no record: the next try is not a 409', async () => {
    const key = `k-${randomUUID()}`;
    const post = () =>
      call('/deaddl', {
        method: 'POST',
        body: '{}',
        headers: { 'content-type': 'application/json', authorization: 'Bearer a', 'idempotency-key': key },
      });
    const first = await post();
    expect([first.status, first.code]).toEqual([504, 'SLC_ERR_UPSTREAM_TIMEOUT']);
    await sleep(100);
    const again = await post();
    expect(again.code).not.toBe('SLC_ERR_IDEMPOTENCY_IN_PROGRESS');
  });

  it('a backend declared idempotent gets its POSTs retried, body and all', async () => {
    const id = randomUUID();
    const r = await call(`/backend?id=${id}&fail=1`, { method: 'POST', body: 'the-body' });
    expect(r.status).toBe(200);
    expect(hits.get(id)).toBe(2);
    expect(up.seen.filter((s) => s.url.includes(id)).map((s) => s.body)).toEqual(['the-body', 'the-body']);
  });

  it('the budget caps retries: with none left, failures pass through untried', async () => {
    // budgetPercent 0 and minRetriesPerSecond 1: the reserve alone, 10 retries per 10 s window.
    const ids = Array.from({ length: 13 }, () => randomUUID());
    for (const id of ids) await call(`/tight?id=${id}&fail=1`);
    const tried = ids.map((id) => hits.get(id));
    expect(tried.filter((n) => n === 2)).toHaveLength(10);
    expect(tried.filter((n) => n === 1)).toHaveLength(3);
    expect(await metric('sluice_upstream_retries_total', 'upstream="tight",reason="budget_exhausted"')).toBe(
      3,
    );
  });

  it('the request deadline bounds the tries: 504 when it passes', async () => {
    const id = randomUUID();
    const started = Date.now();
    // The upstream would answer after 3 s; undici's timers may fire a little late, hence 2 s of margin.
    const r = await call(`/deadline?id=${id}&slow=3000`);
    expect([r.status, r.code]).toEqual([504, 'SLC_ERR_UPSTREAM_TIMEOUT']);
    expect(Date.now() - started).toBeLessThan(2_000);
  });
});

describe('circuit breaker', () => {
  it('opens on failures, refuses without touching the upstream, probes after openFor, closes on success', async () => {
    const id = randomUUID();
    for (let i = 0; i < 4; i++) expect((await call(`/breaker?id=${id}&always=500`)).status).toBe(500);
    expect(await metric('sluice_upstream_circuit_state', 'upstream="breaker"')).toBe(1);
    const refused = await call(`/breaker?id=${id}&always=500`);
    expect([refused.status, refused.code]).toEqual([503, 'SLC_ERR_UPSTREAM_CIRCUIT_OPEN']);
    expect(hits.get(id)).toBe(4);
    await sleep(350);
    // Half-open: one probe goes through; it succeeds and the breaker closes.
    expect((await call(`/breaker?id=${id}`)).status).toBe(200);
    expect(hits.get(id)).toBe(5);
    expect(await metric('sluice_upstream_circuit_state', 'upstream="breaker"')).toBe(0);
    expect((await call(`/breaker?id=${id}`)).status).toBe(200);
  });

  it('a failed probe opens it again', async () => {
    const id = randomUUID();
    for (let i = 0; i < 4; i++) await call(`/breaker?id=${id}&always=500`);
    await sleep(350);
    expect((await call(`/breaker?id=${id}&always=500`)).status).toBe(500);
    expect((await call(`/breaker?id=${id}`)).code).toBe('SLC_ERR_UPSTREAM_CIRCUIT_OPEN');
    await sleep(350);
    expect((await call(`/breaker?id=${id}`)).status).toBe(200);
  });
});
