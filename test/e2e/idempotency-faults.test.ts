/**
 * The idempotency plugin under faults, with `sluice run` processes and real Redis servers:
 *  - the replica executing a request is SIGKILLed: its lease lapses and another replica takes
 *    the key over (one more execution, then replays);
 *  - Redis stalls (SIGSTOP): idempotent requests fail closed with a quick 503, other routes
 *    are untouched, nothing reaches the upstream without a record, service resumes by itself;
 *  - Redis is killed and restarted on the same port: 503 meanwhile, 201 again after, with
 *    the same sluice process.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import type { ServerResponse } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { Pool } from 'undici';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { authorizationScope, recordId } from '../../dataplane/plugins/idempotency/scope.ts';
import { fetchMetrics, metricValue, rssBytes, startSluice, stopAllSluice } from '../helpers/processes.ts';
import {
  dropPrefix,
  type PrivateRedis,
  sharedRedisUrl,
  startPrivateRedis,
  uniquePrefix,
} from '../helpers/redis.ts';
import { startUpstream, type Upstream } from '../helpers/servers.ts';

const AUTH = 'Bearer client-1';
const IN_PROGRESS = 'SLC_ERR_IDEMPOTENCY_IN_PROGRESS';
const UNAVAILABLE = 'SLC_ERR_IDEMPOTENCY_STORE_UNAVAILABLE';

const yaml = (upstreamPort: number, lease: string) => `
apiVersion: sluice.dev/v1alpha1
kind: GatewayPlugin
metadata: { name: idem, namespace: default }
spec:
  plugin: idempotency
  idempotency: { lease: ${lease}, ttl: 1h }
---
apiVersion: sluice.dev/v1alpha1
kind: GatewayRoute
metadata: { name: charges, namespace: default }
spec:
  service: { name: charges, url: "http://127.0.0.1:${upstreamPort}", timeouts: { response: 30s } }
  plugins: [{ name: idem }]
  routes:
    - { name: create, paths: ["/charges"], methods: [POST] }
---
apiVersion: sluice.dev/v1alpha1
kind: GatewayRoute
metadata: { name: plain, namespace: default }
spec:
  service: { name: plain, url: "http://127.0.0.1:${upstreamPort}" }
  routes:
    - { name: plain, paths: ["/plain"] }
`;

const newKey = (what: string) => `${what}-${randomUUID()}`;

/** An upstream: 201 with a JSON body unique per execution on POST /charges, 200 elsewhere (startUpstream's echo). */
function chargesUpstream(hold?: (key: string, n: number) => boolean) {
  const hung: ServerResponse[] = [];
  const perKey = new Map<string, number>();
  let executions = 0;
  const ready = startUpstream((req, res) => {
    if (req.method !== 'POST' || req.url !== '/charges') return false;
    const key = String(req.headers['idempotency-key']);
    const n = (perKey.get(key) ?? 0) + 1;
    perKey.set(key, n);
    executions++;
    if (hold?.(key, n)) {
      hung.push(res); // never answered; the connection is cut when the test closes the upstream
      return true;
    }
    const out = JSON.stringify({ id: `ch_${executions}`, key, execution: n });
    res.writeHead(201, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(out) });
    res.end(out);
    return true;
  });
  return { ready, perKey, hung, executions: () => executions };
}

interface Answer {
  method: 'POST' | 'GET';
  key: string | null;
  /** performance.now() at send and at the end of the response body (or of the failure). */
  start: number;
  end: number;
  status: number; // 0: the request failed (connection error, timeout)
  code: string | undefined;
  retryAfter: string | undefined;
  replayed: boolean;
  body: string;
  error?: string;
}

async function send(
  pool: Pool,
  method: 'POST' | 'GET',
  key: string | null,
  timeoutMs = 10_000,
): Promise<Answer> {
  const start = performance.now();
  try {
    const r = await pool.request({
      path: method === 'POST' ? '/charges' : '/plain',
      method,
      headers:
        method === 'POST'
          ? { 'content-type': 'application/json', authorization: AUTH, 'idempotency-key': key! }
          : { authorization: AUTH },
      body: method === 'POST' ? JSON.stringify({ amount: 100, currency: 'EUR' }) : undefined,
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
    });
    const body = await r.body.text();
    let code: string | undefined;
    if (String(r.headers['content-type']).startsWith('application/problem+json'))
      code = (JSON.parse(body) as { code?: string }).code;
    return {
      method,
      key,
      start,
      end: performance.now(),
      status: r.statusCode,
      code,
      retryAfter: r.headers['retry-after'] as string | undefined,
      replayed: r.headers['idempotent-replayed'] === 'true',
      body,
    };
  } catch (err) {
    return {
      method,
      key,
      start,
      end: performance.now(),
      status: 0,
      code: undefined,
      retryAfter: undefined,
      replayed: false,
      body: '',
      error: String(err),
    };
  }
}

/** Polls `cond` every 20 ms, up to `ms`. */
async function waitFor(cond: () => boolean, ms: number, what: string): Promise<void> {
  const until = performance.now() + ms;
  while (!cond()) {
    if (performance.now() > until) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await sleep(20);
  }
}

/** The record id the plugin derives for (Authorization: AUTH, key); diagnostics only. */
const recordIdOf = (key: string) => recordId(authorizationScope(AUTH), key);

/** Ids of the records under `prefix` still IN_PROGRESS (diagnostics only). */
async function inProgressRecords(url: string, prefix: string): Promise<Set<string>> {
  const r = new Redis(url);
  const ids = new Set<string>();
  try {
    let cursor = '0';
    do {
      const [next, keys] = await r.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
      cursor = next;
      for (const k of keys) {
        if (k.endsWith(':lease')) continue;
        if ((await r.hget(k, 'st')) === 'IN_PROGRESS') ids.add(k.slice(prefix.length + 1, -1));
      }
    } while (cursor !== '0');
  } finally {
    r.disconnect();
  }
  return ids;
}

const latency = (a: Answer) => a.end - a.start;
function percentile(values: number[], p: number): number {
  if (!values.length) return Number.NaN;
  const sorted = [...values].sort((x, y) => x - y);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}
const round = (n: number) => Math.round(n);

/** A redis-server on a given port (to restart one where it was); killed by `stop`. */
async function redisOnPort(port: number): Promise<{ process: ChildProcess; stop(): Promise<void> }> {
  const child = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    { stdio: 'ignore' },
  );
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGKILL');
    await once(child, 'exit');
  };
  const probe = new Redis({ port, lazyConnect: true, retryStrategy: () => null, maxRetriesPerRequest: 0 });
  probe.on('error', () => {}); // refused until it listens: retried below
  try {
    for (let i = 0; ; i++) {
      try {
        await probe.connect();
        await probe.ping();
        return { process: child, stop };
      } catch {
        probe.disconnect();
        if (i > 100 || child.exitCode !== null) {
          await stop();
          throw new Error(`redis-server did not start again on port ${port}`);
        }
        await sleep(50);
      }
    }
  } finally {
    probe.disconnect();
  }
}

// Cleanup of what a test started (also when it fails): pools, processes, upstreams, Redis servers.
const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  const all = cleanups.splice(0).reverse();
  for (const c of all)
    await Promise.resolve()
      .then(c)
      .catch(() => {});
  await stopAllSluice();
}, 30_000);
afterAll(() => stopAllSluice());

describe('idempotency when the replica executing a request dies', () => {
  it('SIGKILL during the upstream call: 409 while the lease runs, then one takeover execution, then replays', async () => {
    const prefix = uniquePrefix('sigkill');
    cleanups.push(() => dropPrefix(sharedRedisUrl, prefix));
    const KEY = newKey('sigkill');
    const up = chargesUpstream((key, n) => key === KEY && n === 1);
    const upstream = await up.ready;
    cleanups.push(() => upstream.close());
    const args = ['--redis', sharedRedisUrl, '--redis-prefix', prefix, '--redis-timeout-ms', '300'];
    const [a, b] = await Promise.all([
      startSluice({ yaml: yaml(upstream.port, '1s'), args }),
      startSluice({ yaml: yaml(upstream.port, '1s'), args }),
    ]);
    const poolA = new Pool(a.proxyUrl, { connections: 1 });
    const poolB = new Pool(b.proxyUrl, { connections: 1 });
    cleanups.push(
      () => poolA.destroy(),
      () => poolB.destroy(),
    );

    // The first request runs on A; the upstream holds it.
    const first = send(poolA, 'POST', KEY, 20_000);
    await waitFor(() => upstream.seen.length === 1, 5_000, 'the upstream to receive the first request');
    // Let A renew its lease at least once (every lease/3) before it dies, so the lease is really held.
    await sleep(400);
    await a.kill('SIGKILL');
    const killedAt = performance.now();
    const firstAnswer = await first;
    expect(firstAnswer.status).toBe(0); // A died: the client saw the connection go, no response

    // Retry on B every ~100 ms until the key is taken over (bounded: 60 tries).
    const answers: Answer[] = [];
    for (let i = 0; i < 60; i++) {
      const r = await send(poolB, 'POST', KEY);
      answers.push(r);
      if (r.status !== 409) break;
      await sleep(100);
    }
    const taken = answers.at(-1)!;
    // Afterwards: replays of the takeover's response.
    const after: Answer[] = [];
    for (let i = 0; i < 3; i++) after.push(await send(poolB, 'POST', KEY));

    const conflicts = answers.slice(0, -1);
    console.log(
      `[idempotency-faults/sigkill] ${conflicts.length} x 409 on B, then ${taken.status}${taken.replayed ? ' (replay)' : ''} ` +
        `at +${round(taken.end - killedAt)} ms after SIGKILL (lease 1s); last 409 at ` +
        `+${conflicts.length ? round(conflicts.at(-1)!.end - killedAt) : '-'} ms; upstream executions ${up.executions()}`,
    );

    expect(conflicts.length).toBeGreaterThanOrEqual(1);
    for (const c of conflicts) {
      expect(c.code).toBe(IN_PROGRESS);
      expect(c.retryAfter).toBeDefined();
    }
    expect(taken.status).toBe(201);
    expect(taken.replayed).toBe(false);
    expect(JSON.parse(taken.body)).toMatchObject({ key: KEY, execution: 2 });
    expect(taken.end - killedAt).toBeLessThan(3_000);
    for (const r of after) {
      expect(r.status).toBe(201);
      expect(r.replayed).toBe(true);
      expect(r.body).toBe(taken.body);
    }
    // The upstream: executed exactly twice (the hung first request and the takeover), both
    // times with the client's Idempotency-Key forwarded, so it can recognise the second.
    expect(up.executions()).toBe(2);
    expect(upstream.seen.map((s) => [s.method, s.url, s.headers['idempotency-key']])).toEqual([
      ['POST', '/charges', KEY],
      ['POST', '/charges', KEY],
    ]);
    expect(upstream.seen[1].body).toBe(upstream.seen[0].body);
    const metrics = await fetchMetrics(b.adminUrl);
    const outcome = (o: string) => metricValue(metrics, 'sluice_idempotency_requests_total', { outcome: o });
    expect(outcome('takeover')).toBe(1);
    expect(outcome('executed')).toBe(0);
    expect(outcome('conflict')).toBe(conflicts.length);
    expect(outcome('replayed')).toBe(after.length);
  }, 30_000);
});

describe('idempotency when Redis fails', () => {
  async function setup(redis: PrivateRedis) {
    const up = chargesUpstream();
    const upstream = await up.ready;
    cleanups.push(() => upstream.close());
    const prefix = uniquePrefix('faults');
    const sluice = await startSluice({
      yaml: yaml(upstream.port, '10s'),
      args: ['--redis', redis.url, '--redis-prefix', prefix, '--redis-timeout-ms', '300'],
    });
    const pool = new Pool(sluice.proxyUrl, { connections: 24 });
    cleanups.push(() => pool.destroy());
    return { up, upstream, sluice, pool, prefix };
  }

  /** Keys the upstream received on POST /charges. */
  const executedKeys = (upstream: Upstream) =>
    new Set(
      upstream.seen.filter((s) => s.method === 'POST').map((s) => String(s.headers['idempotency-key'])),
    );

  it('Redis stalled (SIGSTOP): fast 503 on idempotent routes, other routes served, recovery after SIGCONT', async () => {
    const redis = await startPrivateRedis();
    cleanups.push(() => redis.stop());
    const { upstream, sluice, pool, prefix } = await setup(redis);

    // Steady load: 20 clients, each alternating POST /charges (a fresh key each time) and GET /plain.
    const CLIENTS = 20;
    const answers: Answer[] = [];
    let running = true;
    const hardStop = performance.now() + 20_000;
    const clients = Array.from({ length: CLIENTS }, async (_, c) => {
      for (let i = 0; i < 5_000 && running && performance.now() < hardStop; i++) {
        const post = (i + c) % 2 === 0;
        answers.push(await send(pool, post ? 'POST' : 'GET', post ? newKey('stall') : null, 5_000));
        await sleep(5);
      }
    });

    await sleep(1_000);
    const rssBefore = rssBytes(sluice.process.pid);
    const pausedAt = performance.now();
    redis.pause();
    await sleep(3_000);
    const rssStalled = rssBytes(sluice.process.pid);
    const resumedAt = performance.now();
    redis.resume();
    const firstSuccess = () =>
      answers.find((x) => x.method === 'POST' && x.start > resumedAt && x.status === 201);
    try {
      await waitFor(() => firstSuccess() !== undefined, 8_000, 'a 201 after SIGCONT');
      await sleep(1_000);
    } finally {
      running = false;
      await Promise.all(clients);
    }
    const rssAfter = rssBytes(sluice.process.pid);
    const metrics = await fetchMetrics(sluice.adminUrl);
    const leftInProgress = await inProgressRecords(redis.url, `${prefix}idem:`);

    const posts = answers.filter((x) => x.method === 'POST');
    const gets = answers.filter((x) => x.method === 'GET');
    const inStall = (x: Answer) => x.start > pausedAt && x.end < resumedAt;
    const stallPosts = posts.filter(inStall);
    const stallGets = gets.filter(inStall);
    const unavailable = posts.filter((x) => x.status === 503);
    // The first POST sent after SIGCONT to answer 201 (answers is in completion order: take the earliest end).
    const recovered = posts
      .filter((x) => x.start > resumedAt && x.status === 201)
      .reduce((a, b) => (b.end < a.end ? b : a));
    const recoveryMs = recovered.end - resumedAt;
    const settled = posts.filter((x) => x.start > recovered.end + 200);
    const stallLat = stallPosts.map(latency);
    const storeErrors = metricValue(metrics, 'sluice_idempotency_requests_total', { outcome: 'store_error' });
    const mb = (n: number | null) => (n === null ? '?' : (n / 2 ** 20).toFixed(1));
    console.log(
      `[idempotency-faults/stall] ${answers.length} requests (${posts.length} POST, ${gets.length} GET); ` +
        `during the 3 s stall: ${stallPosts.length} POSTs (` +
        `${stallPosts.filter((x) => x.status === 503).length} x 503), latency p50 ${round(percentile(stallLat, 50))} ms, ` +
        `p99 ${round(percentile(stallLat, 99))} ms, max ${round(Math.max(...stallLat))} ms; ` +
        `${stallGets.length} GET /plain, max ${round(Math.max(...stallGets.map(latency)))} ms; ` +
        `503s overall ${unavailable.length}, store_error metric ${storeErrors}; ` +
        `first 201 after SIGCONT at +${round(recoveryMs)} ms; ` +
        `RSS ${mb(rssBefore)} → ${mb(rssStalled)} → ${mb(rssAfter)} MiB; ` +
        `IN_PROGRESS records left in Redis: ${leftInProgress.size}, of which for keys answered 503: ` +
        `${unavailable.filter((x) => leftInProgress.has(recordIdOf(x.key!))).length}`,
    );

    // Nothing failed at the transport level, and only these statuses were seen.
    expect(answers.filter((x) => x.status === 0).slice(0, 3)).toEqual([]);
    expect(posts.filter((x) => x.status !== 201 && x.status !== 503).slice(0, 3)).toEqual([]);
    // Before the stall, service was normal.
    expect(posts.filter((x) => x.end < pausedAt && x.status !== 201).slice(0, 3)).toEqual([]);
    // During the stall: every idempotent request got 503 STORE_UNAVAILABLE with Retry-After, fast.
    expect(stallPosts.length).toBeGreaterThanOrEqual(20);
    for (const x of stallPosts) {
      expect(x.status).toBe(503);
      expect(x.code).toBe(UNAVAILABLE);
      expect(x.retryAfter).toMatch(/^\d+$/);
    }
    expect(Math.max(...stallLat)).toBeLessThan(1_500);
    for (const x of unavailable) {
      expect(x.code).toBe(UNAVAILABLE);
      expect(x.retryAfter).toMatch(/^\d+$/);
    }
    // GET /plain does not use Redis: 200 throughout, stall included.
    expect(stallGets.length).toBeGreaterThanOrEqual(20);
    expect(gets.filter((x) => x.status !== 200).slice(0, 3)).toEqual([]);
    expect(Math.max(...stallGets.map(latency))).toBeLessThan(1_500);
    // Fail closed: no request answered 503 reached the upstream; every 201 ran exactly once.
    const ran = executedKeys(upstream);
    expect(unavailable.filter((x) => ran.has(x.key!)).map((x) => x.key)).toEqual([]);
    expect(posts.filter((x) => x.status === 201 && !ran.has(x.key!)).length).toBe(0);
    expect(upstream.seen.filter((s) => s.method === 'POST').length).toBe(ran.size);
    // Recovery by itself after SIGCONT, and then steady success.
    expect(recoveryMs).toBeLessThan(5_000);
    expect(settled.length).toBeGreaterThan(0);
    expect(settled.filter((x) => x.status !== 201).slice(0, 3)).toEqual([]);
    // A 503 means "nothing ran, retry": a claim that Redis ran after its deadline is taken back, so
    // retrying a 503'd key after recovery executes it now, not after a 10 s lease of 409s.
    await sleep(2_500);
    const retried = await Promise.all(unavailable.map((x) => send(pool, 'POST', x.key)));
    expect(retried.filter((x) => x.status !== 201).map((x) => [x.status, x.code])).toEqual([]);
    expect([...(await inProgressRecords(redis.url, `${prefix}idem:`))].length).toBe(0);
    // Bounded: the failures were counted, and the stall did not pile up memory.
    expect(storeErrors).toBeGreaterThanOrEqual(unavailable.length);
    expect(
      metricValue(metrics, 'sluice_store_operation_seconds_count', { store: 'redis', result: 'error' }),
    ).toBeGreaterThanOrEqual(1);
    expect(rssBefore).not.toBeNull();
    expect(rssAfter).not.toBeNull();
    expect(rssAfter! - rssBefore!).toBeLessThan(200 * 2 ** 20);
    expect(sluice.process.exitCode).toBeNull();
  }, 50_000);

  it('a claim Redis runs after its 503 deadline is taken back: the retry after recovery executes at once', async () => {
    const redis = await startPrivateRedis();
    cleanups.push(() => redis.stop());
    const { upstream, pool } = await setup(redis);
    const key = newKey('late-claim');
    redis.pause();
    const refused = await send(pool, 'POST', key);
    expect([refused.status, refused.code]).toEqual([503, UNAVAILABLE]);
    // Redis now runs the claim that was already in its socket: without the take-back, this key
    // would answer 409 for the whole 10 s lease.
    redis.resume();
    const resumedAt = performance.now();
    let answer: Answer | null = null;
    const statuses: number[] = [];
    while (performance.now() - resumedAt < 4_000) {
      answer = await send(pool, 'POST', key);
      statuses.push(answer.status);
      if (answer.status === 201) break;
      await sleep(200);
    }
    console.log(`[idempotency-faults/late-claim] statuses after SIGCONT: ${statuses.join(' ')}`);
    expect(answer?.status).toBe(201);
    expect(executedKeys(upstream).has(key)).toBe(true);
  }, 20_000);

  it('Redis killed, then restarted on the same port: 503 while down, 201 again after, same sluice process', async () => {
    const redis = await startPrivateRedis();
    cleanups.push(() => redis.stop());
    const { upstream, sluice, pool } = await setup(redis);
    const pid = sluice.process.pid;

    const before = await send(pool, 'POST', newKey('restart'));
    expect(before.status).toBe(201);

    await redis.stop(); // SIGKILL
    const killedAt = performance.now();
    const down: Answer[] = [];
    while (performance.now() - killedAt < 2_000 && down.length < 200) {
      down.push(await send(pool, 'POST', newKey('restart')));
      await sleep(50);
    }

    const restarted = await redisOnPort(redis.port);
    cleanups.push(() => restarted.stop());
    const restartedAt = performance.now();
    const up: Answer[] = [];
    while (performance.now() - restartedAt < 8_000 && up.length < 200) {
      const r = await send(pool, 'POST', newKey('restart'));
      up.push(r);
      if (r.status === 201) break;
      await sleep(100);
    }
    const ok = up.at(-1)!;
    const recoveryMs = ok.end - restartedAt;
    const later = await send(pool, 'POST', newKey('restart'));
    const stillOk = await send(pool, 'GET', null);
    const downLat = down.map(latency);
    console.log(
      `[idempotency-faults/restart] Redis down ${round(restartedAt - killedAt)} ms: ${down.length} POSTs, ` +
        `statuses ${[...new Set(down.map((x) => x.status))].join(',')}, latency max ${round(Math.max(...downLat))} ms; ` +
        `first 201 at +${round(recoveryMs)} ms after the restart (${up.length} tries)`,
    );

    expect(down.length).toBeGreaterThanOrEqual(10);
    for (const x of down) {
      expect(x.status).toBe(503);
      expect(x.code).toBe(UNAVAILABLE);
      expect(x.retryAfter).toMatch(/^\d+$/);
    }
    expect(Math.max(...downLat)).toBeLessThan(1_500);
    for (const x of up.slice(0, -1)) expect([x.status, x.code]).toEqual([503, UNAVAILABLE]);
    expect(ok.status).toBe(201);
    expect(recoveryMs).toBeLessThan(5_000);
    expect(later.status).toBe(201);
    expect(stillOk.status).toBe(200);
    // Nothing answered 503 reached the upstream; the process was never restarted.
    const ran = executedKeys(upstream);
    expect([...down, ...up].filter((x) => x.status === 503 && ran.has(x.key!)).map((x) => x.key)).toEqual([]);
    expect(ran.size).toBe(3); // before, the first 201 after the restart, later
    expect(sluice.process.pid).toBe(pid);
    expect(sluice.process.exitCode).toBeNull();
    expect(sluice.process.signalCode).toBeNull();
  }, 30_000);
});
