/**
 * Three `sluice run` replicas on one Redis, one idempotency route: 1,000 keys, each sent 10
 * times at once (10,000 POSTs spread round-robin over the replicas). Exactly one execution per
 * key reaches the upstream; every other copy is a replay of that execution's response or a
 * 409 while it runs; nothing else. Afterwards every key replays the same response.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Pool } from 'undici';
import { startSluice, metricValue, fetchMetrics, type SluiceProcess } from '../helpers/processes.ts';
import { dropPrefix, sharedRedisUrl, uniquePrefix } from '../helpers/redis.ts';
import { startUpstream, type Upstream } from '../helpers/servers.ts';

const KEYS = 1_000;
const COPIES = 10;
const REPLICAS = 3;
const IN_FLIGHT = 200;
const AUTH = 'Bearer client-1';

const yaml = (upstreamPort: number) => `
apiVersion: sluice.dev/v1alpha1
kind: GatewayPlugin
metadata: { name: idem, namespace: default }
spec:
  plugin: idempotency
  idempotency: { lease: 5s, ttl: 1h }
---
apiVersion: sluice.dev/v1alpha1
kind: GatewayRoute
metadata: { name: charges, namespace: default }
spec:
  service: { name: charges, url: "http://127.0.0.1:${upstreamPort}", timeouts: { response: 30s } }
  plugins: [{ name: idem }]
  routes:
    - { name: create, paths: ["/charges"], methods: [POST] }
`;

interface Answer {
  key: number;
  replica: number;
  status: number;
  replayed: boolean;
  retryAfter: string | undefined;
  contentType: string | undefined;
  body: string;
}

/** Runs `work(i)` for i in [0, n) with at most `limit` at a time. */
async function bounded(n: number, limit: number, work: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < n) await work(next++);
  };
  await Promise.all(Array.from({ length: Math.min(limit, n) }, worker));
}

describe('idempotency across three sluice replicas sharing Redis', () => {
  const prefix = uniquePrefix('replicas');
  const keys = Array.from({ length: KEYS }, (_, i) => `replicas-${randomUUID()}-${i}`);
  const bodies = keys.map((_, i) => JSON.stringify({ amount: 100 + i, currency: 'EUR', ref: `order-${i}` }));
  const executions = new Map<string, string[]>(); // key → bodies the upstream answered for it
  let executed = 0;
  let upstream: Upstream;
  let replicas: SluiceProcess[] = [];
  let pools: Pool[] = [];

  beforeAll(async () => {
    upstream = await startUpstream((req, res) => {
      const key = req.headers['idempotency-key'] as string;
      const out = JSON.stringify({ id: `ch_${++executed}`, execution: executed, key });
      const list = executions.get(key) ?? [];
      list.push(out);
      executions.set(key, list);
      setTimeout(
        () => {
          res.writeHead(201, {
            'content-type': 'application/json',
            'content-length': Buffer.byteLength(out),
          });
          res.end(out);
        },
        Math.floor(Math.random() * 6),
      );
      return true;
    });
    const args = [
      '--redis',
      sharedRedisUrl,
      '--redis-prefix',
      prefix,
      '--redis-timeout-ms',
      '1000',
      '--max-body-bytes',
      '65536',
    ];
    replicas = await Promise.all(
      Array.from({ length: REPLICAS }, () => startSluice({ yaml: yaml(upstream.port), args })),
    );
    pools = replicas.map((r) => new Pool(r.proxyUrl, { connections: 32, pipelining: 1 }));
  }, 30_000);

  afterAll(async () => {
    await Promise.allSettled(pools.map((p) => p.destroy()));
    await Promise.allSettled(replicas.map((r) => r.stop()));
    await upstream?.close();
    await dropPrefix(sharedRedisUrl, prefix);
  }, 30_000);

  async function post(key: number, replica: number): Promise<Answer> {
    const r = await pools[replica].request({
      path: '/charges',
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        authorization: AUTH,
        'idempotency-key': keys[key],
      },
      body: bodies[key],
      headersTimeout: 20_000,
      bodyTimeout: 20_000,
    });
    return {
      key,
      replica,
      status: r.statusCode,
      replayed: r.headers['idempotent-replayed'] === 'true',
      retryAfter: r.headers['retry-after'] as string | undefined,
      contentType: r.headers['content-type'] as string | undefined,
      body: await r.body.text(),
    };
  }

  it('executes each key exactly once; the other copies replay it or get 409', async () => {
    // Copies of one key are consecutive in the queue, so the 10 go out together, to all three replicas.
    const total = KEYS * COPIES;
    const answers: Answer[] = new Array(total);
    const started = performance.now();
    await bounded(total, IN_FLIGHT, async (i) => {
      answers[i] = await post(Math.floor(i / COPIES), i % REPLICAS);
    });
    const elapsedMs = Math.round(performance.now() - started);

    let replays = 0;
    let firsts = 0;
    let conflicts = 0;
    const other: Answer[] = [];
    const wrongBody: Answer[] = [];
    const firstsPerKey = new Map<number, number>();
    for (const a of answers) {
      const ran = executions.get(keys[a.key]);
      if (a.status === 201) {
        if (ran?.length !== 1 || a.body !== ran[0]) wrongBody.push(a);
        if (a.replayed) replays++;
        else {
          firsts++;
          firstsPerKey.set(a.key, (firstsPerKey.get(a.key) ?? 0) + 1);
        }
      } else if (a.status === 409) {
        const p = JSON.parse(a.body) as { code?: string };
        if (
          p.code !== 'SLC_ERR_IDEMPOTENCY_IN_PROGRESS' ||
          a.retryAfter === undefined ||
          a.contentType !== 'application/problem+json' ||
          a.replayed
        )
          other.push(a);
        else conflicts++;
      } else other.push(a);
    }
    const perReplica = replicas.map((_, r) => answers.filter((a) => a.replica === r).length);
    console.log(
      `[idempotency-replicas] ${total} POSTs (${KEYS} keys x ${COPIES}) over ${REPLICAS} replicas in ${elapsedMs} ms ` +
        `(${Math.round((total / elapsedMs) * 1000)} req/s): upstream executions ${executed}, ` +
        `first responses ${firsts}, replays ${replays}, 409s ${conflicts}, other ${other.length}; ` +
        `per replica ${perReplica.join('/')}`,
    );

    // The upstream: exactly one execution per key, no key twice.
    expect(executed).toBe(KEYS);
    expect(upstream.seen.length).toBe(KEYS);
    expect(executions.size).toBe(KEYS);
    expect([...executions.entries()].filter(([, ran]) => ran.length !== 1)).toEqual([]);
    for (const s of upstream.seen) expect(s.headers.authorization).toBe(AUTH);
    // The clients: 201 with the body of that execution (one first response per key, the rest
    // replays) or 409 IN_PROGRESS; nothing else.
    expect(other.slice(0, 5)).toEqual([]);
    expect(wrongBody.slice(0, 5)).toEqual([]);
    expect(firsts).toBe(KEYS);
    expect([...firstsPerKey.values()].every((n) => n === 1)).toBe(true);
    expect(firsts + replays + conflicts).toBe(total);

    // The replicas' own count agrees with what the clients saw.
    const texts = await Promise.all(replicas.map((r) => fetchMetrics(r.adminUrl)));
    const outcome = (o: string) =>
      texts.reduce((n, t) => n + metricValue(t, 'sluice_idempotency_requests_total', { outcome: o }), 0);
    expect(outcome('executed')).toBe(KEYS);
    expect(outcome('takeover')).toBe(0);
    expect(outcome('replayed')).toBe(replays);
    expect(outcome('conflict')).toBe(conflicts);
    expect(outcome('store_error')).toBe(0);
  }, 60_000);

  it('after all finished, every key replays the response of its one execution', async () => {
    expect(executed).toBe(KEYS); // the first test ran
    const answers: Answer[] = new Array(KEYS);
    await bounded(KEYS, IN_FLIGHT, async (i) => {
      answers[i] = await post(i, (i + 1) % REPLICAS);
    });
    const bad = answers.filter(
      (a) => a.status !== 201 || !a.replayed || a.body !== executions.get(keys[a.key])?.[0],
    );
    expect(bad.slice(0, 5)).toEqual([]);
    expect(executed).toBe(KEYS);
    expect(upstream.seen.length).toBe(KEYS);
  }, 30_000);
});
