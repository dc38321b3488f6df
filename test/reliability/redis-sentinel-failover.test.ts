/**
 * A Redis Sentinel master SIGKILLed under load (test/helpers/redis-sentinel.ts: master, replica,
 * one Sentinel, 2 s to notice, quorum 1), three gateways on the redis-sentinel:// URL. Every
 * 20 ms: a POST with a new Idempotency-Key (and a copy of the key sent 400 ms earlier, to
 * another gateway), and a GET on a failMode open rate limit (L=20 an hour per bucket, 10
 * buckets, `--replicas-hint 3`: counted locally at L ÷ 3 per gateway while Redis is away). After
 * 3 s the master is killed; the Sentinel promotes the replica; the gateways follow it.
 *  - no key executed twice (upstream executions counted per Idempotency-Key);
 *  - recovery without a restart: nothing fails once the new master has served for 2 s;
 *  - printed: the 503s (idempotency fails closed) and how long they lasted, the rate-limit
 *    admissions beyond L per bucket (fail-open, and the increments not yet replicated when
 *    the master died).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Pool } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateways, type Gateways } from '../helpers/gateways.ts';
import { uniquePrefix } from '../helpers/redis.ts';
import { startRedisSentinel, type TestRedisSentinel } from '../helpers/redis-sentinel.ts';
import { startUpstream, type Upstream } from '../helpers/servers.ts';

const TICK_MS = 20;
const BEFORE_MS = 3_000;
const AFTER_MS = 5_000;
const BUCKETS = 10;
const LIMIT = 20;
const RETRY_AFTER_TICKS = 20;

const yaml = (port: number) => `
apiVersion: sluice.dev/v1alpha1
kind: GatewayPlugin
metadata: { name: idem }
spec: { plugin: idempotency, config: { lease: 5s, ttl: 1h } }
---
apiVersion: sluice.dev/v1alpha1
kind: GatewayPlugin
metadata: { name: open }
spec: { plugin: rate-limiting, config: { hour: ${LIMIT}, policy: redis, limitBy: header, header: x-bucket, failMode: open } }
---
apiVersion: sluice.dev/v1alpha1
kind: GatewayRoute
metadata: { name: f }
spec:
  service: { name: up, url: "http://127.0.0.1:${port}" }
  routes:
    - { name: charges, paths: ["/charges"], methods: [POST], plugins: [{ name: idem }] }
    - { name: open, paths: ["/open"], plugins: [{ name: open }] }
`;

interface Sent {
  kind: 'idem' | 'open';
  name: string;
  at: number;
  status: number;
}

describe('Redis Sentinel: the master SIGKILLed under load', () => {
  let redis: TestRedisSentinel;
  let up: Upstream;
  let fleet: Gateways;
  let pools: Pool[];
  const prefix = uniquePrefix('sentinel-failover');

  beforeAll(async () => {
    redis = await startRedisSentinel({ replica: true });
    up = await startUpstream();
    const args = ['--redis', redis.url, '--redis-prefix', prefix, '--replicas-hint', '3'];
    fleet = await startGateways(3, { yaml: yaml(up.port), args, connections: 16, logLevel: 'info' });
    ({ pools } = fleet);
  }, 120_000);
  afterAll(async () => {
    await fleet?.stop();
    await up?.close();
    await redis?.stop();
  });

  it('no key executed twice; 503s only while no master; recovers; fail-open admissions reported', async () => {
    const sent: Sent[] = [];
    const pending: Promise<void>[] = [];
    const t0 = performance.now();
    const send = (kind: Sent['kind'], name: string, g: number) => {
      const idem = kind === 'idem';
      const at = performance.now() - t0;
      pending.push(
        pools[g]
          .request({
            path: idem ? '/charges' : '/open',
            method: idem ? 'POST' : 'GET',
            headers: idem
              ? { authorization: 'Bearer s', 'idempotency-key': name, 'content-type': 'application/json' }
              : { 'x-bucket': name },
            body: idem ? '{}' : undefined,
          })
          .then(
            async (r) => {
              await r.body.dump();
              sent.push({ kind, name, at, status: r.statusCode });
            },
            () => {
              sent.push({ kind, name, at, status: 0 });
            },
          ),
      );
    };
    let stop = false;
    const load = (async () => {
      for (let i = 0, next = performance.now(); !stop; i++, next += TICK_MS) {
        send('idem', `${prefix}k${i}`, i % 3);
        if (i >= RETRY_AFTER_TICKS) send('idem', `${prefix}k${i - RETRY_AFTER_TICKS}`, (i + 1) % 3);
        send('open', `${prefix}b${i % BUCKETS}`, (i + 2) % 3);
        await sleep(Math.max(0, next + TICK_MS - performance.now()));
      }
    })();
    await sleep(BEFORE_MS);
    const killedAt = performance.now() - t0;
    await redis.master.stop();
    const promotedTo = redis.replica!.port;
    while ((await redis.masterPort()) !== promotedTo) {
      if (performance.now() - t0 - killedAt > 30_000)
        throw new Error('the Sentinel did not promote the replica');
      await sleep(50);
    }
    const promotedAt = performance.now() - t0;
    await sleep(AFTER_MS);
    stop = true;
    await load;
    await Promise.all(pending);

    const failed = sent.filter((s) => s.status === 503 || s.status === 0 || s.status >= 500);
    const firstFailure = Math.min(...failed.map((s) => s.at));
    const lastFailure = Math.max(...failed.map((s) => s.at));
    const executions = new Map<string, number>();
    for (const s of up.seen)
      if (s.url === '/charges') {
        const k = String(s.headers['idempotency-key']);
        executions.set(k, (executions.get(k) ?? 0) + 1);
      }
    const duplicates = [...executions.values()].filter((n) => n > 1).length;
    const admitted = new Map<string, number>();
    for (const s of sent)
      if (s.kind === 'open' && s.status === 200) admitted.set(s.name, (admitted.get(s.name) ?? 0) + 1);
    const beyond = [...admitted.values()].map((n) => Math.max(0, n - LIMIT));
    const perBucket = sent.filter((s) => s.kind === 'open').length / BUCKETS;
    console.log(
      `[redis-sentinel-failover] ${sent.length} requests over ${Math.round(performance.now() - t0)} ms to 3 gateways; ` +
        `master killed at ${Math.round(killedAt)} ms, replica promoted (Sentinel) ${Math.round(promotedAt - killedAt)} ms later; ` +
        `failed: ${failed.length} (idem ${failed.filter((s) => s.kind === 'idem').length}: ${failed
          .filter((s) => s.kind === 'idem')
          .map((s) => s.status)
          .filter((v, i, a) => a.indexOf(v) === i)
          .join('/')}, rate limit ${failed.filter((s) => s.kind === 'open').length}), ` +
        (failed.length
          ? `from ${Math.round(firstFailure - killedAt)} to ${Math.round(lastFailure - killedAt)} ms after the kill; `
          : '; ') +
        `idempotency: ${executions.size} keys executed, ${duplicates} more than once; ` +
        `rate limit (L=${LIMIT}/h, ~${Math.round(perBucket)} requests per bucket): admitted beyond L per bucket ${beyond.join(' ')} (total ${beyond.reduce((a, b) => a + b, 0)})`,
    );
    expect(duplicates).toBe(0);
    expect(failed.filter((s) => s.kind === 'open')).toEqual([]); // fail-open never refuses
    expect(failed.filter((s) => s.at > promotedAt + 2_000)).toEqual([]);
    expect(executions.size).toBeGreaterThan(100);
  }, 120_000);
});
