/**
 * A Redis Cluster master SIGKILLed under load (`make reliability`: ~1 min, too slow for
 * `make test`). 3 masters + 3 replicas (cluster-require-full-coverage no, node timeout 2 s),
 * three gateways; every 20 ms each of: a POST with a new Idempotency-Key (and a copy of the key
 * sent 400 ms earlier), a GET on a failMode closed rate limit (a 503 when its Redis is away) and
 * a GET on a failMode open one (L=20 an hour, counted locally at L ÷ 3 per gateway while away;
 * 12 buckets, 6 on the master killed), over 30 buckets. After 3 s a master is killed; its replica takes over.
 *  - keys and buckets whose slots were on the other masters: never a 503;
 *  - no key executed twice;
 *  - recovery without restart: once the cluster is ok again, no 503 for any key;
 *  - no log line repeated more than 100 times per gateway;
 *  - printed: the 503s on the killed master's slots, the time to recover, and the fail-open
 *    admission of the buckets whose master was away (the README's figures).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Pool } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { authorizationScope, recordId } from '../../dataplane/plugins/idempotency/scope.ts';
import { bucketOf, countedWhere, who } from '../../dataplane/plugins/rate-limiting/bucket.ts';
import { startGateways, type Gateways } from '../helpers/gateways.ts';
import type { SluiceProcess } from '../helpers/processes.ts';
import { keySlot, startRedisCluster, type TestRedisCluster } from '../helpers/redis-cluster.ts';
import { uniquePrefix } from '../helpers/redis.ts';
import { startUpstream, type Upstream } from '../helpers/servers.ts';

const TICK_MS = 20;
const BEFORE_MS = 3_000;
const AFTER_OK_MS = 4_000;
const BUCKETS = 30;
/** failMode open buckets: half on the master killed, half elsewhere. */
const OPEN_BUCKETS = 12;
const OPEN_LIMIT = 20;
const AUTH = 'Bearer failover';

const yaml = (port: number) => `
apiVersion: sluice.dev/v1alpha1
kind: GatewayPlugin
metadata: { name: idem }
spec: { plugin: idempotency, config: { lease: 5s, ttl: 1h } }
---
apiVersion: sluice.dev/v1alpha1
kind: GatewayPlugin
metadata: { name: closed }
spec: { plugin: rate-limiting, config: { day: 1000000, policy: redis, limitBy: header, header: x-bucket, failMode: closed } }
---
apiVersion: sluice.dev/v1alpha1
kind: GatewayPlugin
metadata: { name: open }
spec: { plugin: rate-limiting, config: { hour: ${OPEN_LIMIT}, policy: redis, limitBy: header, header: x-bucket, failMode: open } }
---
apiVersion: sluice.dev/v1alpha1
kind: GatewayRoute
metadata: { name: f }
spec:
  service: { name: up, url: "http://127.0.0.1:${port}" }
  routes:
    - { name: charges, paths: ["/charges"], methods: [POST], plugins: [{ name: idem }] }
    - { name: closed, paths: ["/closed"], plugins: [{ name: closed }] }
    - { name: open, paths: ["/open"], plugins: [{ name: open }] }
`;

/** The hash tag of a rate-limit bucket: route f's rule `route`, its plugin of that name, by x-bucket. */
const bucketTag = (route: 'closed' | 'open', bucket: string) =>
  bucketOf(
    countedWhere(
      { id: `route/default/f/${route}/0`, source: { namespace: 'default', name: 'f' } },
      `plugin/default/${route}`,
      false,
    ),
    who.header(bucket),
  );
/** The hash tag of an idempotency record (plugins/idempotency/scope.ts). */
const recordTag = (key: string) => recordId(authorizationScope(AUTH), key);

interface Sent {
  kind: 'idem' | 'closed' | 'open';
  /** The key or bucket. */
  name: string;
  slot: number;
  at: number;
  status: number;
}

describe('Redis Cluster: a master SIGKILLed under load', () => {
  let cluster: TestRedisCluster;
  let up: Upstream;
  let fleet: Gateways;
  let gateways: SluiceProcess[];
  let pools: Pool[];
  const prefix = uniquePrefix('failover');

  beforeAll(async () => {
    cluster = await startRedisCluster({ nodeTimeoutMs: 2_000 });
    up = await startUpstream();
    const args = [
      '--redis',
      cluster.url,
      '--redis-prefix',
      prefix,
      '--redis-timeout-ms',
      '2000',
      '--replicas-hint',
      '3',
    ];
    fleet = await startGateways(3, { yaml: yaml(up.port), args, connections: 32, logLevel: 'info' });
    ({ gateways, pools } = fleet);
  }, 120_000);
  afterAll(async () => {
    await fleet?.stop();
    await up?.close();
    await cluster?.stop();
  });

  it('503s only for the killed master’s slots, until the failover; no duplicate; recovers; logs bounded', async () => {
    const sent: Sent[] = [];
    const pending: Promise<void>[] = [];
    const t0 = performance.now();
    const send = (kind: Sent['kind'], name: string, tag: string, g: number) => {
      const idem = kind === 'idem';
      pending.push(
        pools[g]
          .request({
            path: `/${idem ? 'charges' : kind}`,
            method: idem ? 'POST' : 'GET',
            headers: idem
              ? { authorization: AUTH, 'idempotency-key': name, 'content-type': 'application/json' }
              : { 'x-bucket': name },
            body: idem ? '{}' : undefined,
          })
          .then(
            async (r) => {
              await r.body.dump();
              sent.push({
                kind,
                name,
                slot: keySlot(`{${tag}}`),
                at: performance.now() - t0,
                status: r.statusCode,
              });
            },
            () => {
              sent.push({ kind, name, slot: keySlot(`{${tag}}`), at: performance.now() - t0, status: 0 });
            },
          ),
      );
    };
    const owners = await cluster.slotOwners();
    const victim = (await cluster.masters())[0];
    const openOnVictim: string[] = [];
    const openElsewhere: string[] = [];
    for (let b = 0; openOnVictim.length + openElsewhere.length < OPEN_BUCKETS; b++) {
      const name = `${prefix}o${b}`;
      const side = owners[keySlot(`{${bucketTag('open', name)}}`)] === victim ? openOnVictim : openElsewhere;
      if (side.length < OPEN_BUCKETS / 2) side.push(name);
    }
    const openBuckets = [...openOnVictim, ...openElsewhere];
    let i = 0;
    let stop = false;
    const load = (async () => {
      for (let next = performance.now(); !stop; next += TICK_MS) {
        const key = `${prefix}k${i}`;
        send('idem', key, recordTag(key), i % 3);
        if (i >= 20) send('idem', `${prefix}k${i - 20}`, recordTag(`${prefix}k${i - 20}`), (i + 1) % 3);
        const bucket = `${prefix}b${i % BUCKETS}`;
        send('closed', bucket, bucketTag('closed', bucket), (i + 2) % 3);
        const open = openBuckets[i % OPEN_BUCKETS];
        send('open', open, bucketTag('open', open), i % 3);
        i++;
        await sleep(Math.max(0, next + TICK_MS - performance.now()));
      }
    })();
    await sleep(BEFORE_MS);
    const killedAt = performance.now() - t0;
    await victim.stop();
    await cluster.waitOk(30_000);
    const okAt = performance.now() - t0;
    await sleep(AFTER_OK_MS);
    stop = true;
    await load;
    await Promise.all(pending);

    const onVictim = (s: Sent) => owners[s.slot] === victim;
    const failed = sent.filter((s) => s.status === 503 || s.status === 0);
    const healthyFailed = failed.filter((s) => !onVictim(s) && s.kind !== 'open');
    const victimFailed = failed.filter(onVictim);
    const lastFailure = Math.max(killedAt, ...failed.map((s) => s.at));
    const executions = new Map<string, number>();
    for (const s of up.seen)
      if (s.url === '/charges') {
        const k = String(s.headers['idempotency-key']);
        executions.set(k, (executions.get(k) ?? 0) + 1);
      }
    const openAdmitted = new Map<string, number>();
    for (const s of sent)
      if (s.kind === 'open' && s.status === 200)
        openAdmitted.set(s.name, (openAdmitted.get(s.name) ?? 0) + 1);
    const openVictim = openOnVictim.map((b): [string, number] => [b, openAdmitted.get(b) ?? 0]);
    const openHealthy = openElsewhere.map((b): [string, number] => [b, openAdmitted.get(b) ?? 0]);
    const openSent = sent.filter((s) => s.kind === 'open').length / OPEN_BUCKETS;
    const logs = gateways.map((g) => {
      const byMsg = new Map<string, number>();
      for (const line of g.stdout().split('\n').concat(g.stderr().split('\n'))) {
        if (!line.startsWith('{')) continue;
        const msg = (JSON.parse(line) as { msg?: string }).msg ?? '';
        byMsg.set(msg, (byMsg.get(msg) ?? 0) + 1);
      }
      return byMsg;
    });
    const fmt = (xs: [string, number][]) =>
      xs
        .map(([, n]) => n)
        .sort((a, b) => a - b)
        .join(' ');
    console.log(
      `[redis-cluster-failover] ${sent.length} requests over ${Math.round(performance.now() - t0)} ms; ` +
        `master ${victim.address} killed at ${Math.round(killedAt)} ms, cluster ok at ${Math.round(okAt)} ms; ` +
        `503/failed on its slots: ${victimFailed.length} (idem ${victimFailed.filter((s) => s.kind === 'idem').length}, ` +
        `closed ${victimFailed.filter((s) => s.kind === 'closed').length}), elsewhere: ${healthyFailed.length}; ` +
        `last failure ${Math.round(lastFailure - killedAt)} ms after the kill; ` +
        `idempotency: ${executions.size} keys executed, max ${Math.max(...executions.values())} per key; ` +
        `fail-open (L=${OPEN_LIMIT}, ~${Math.round(openSent)} requests per bucket) admitted per bucket, master away: ${fmt(openVictim)}; elsewhere: ${fmt(openHealthy)}; ` +
        `most repeated log lines per gateway: ${logs.map((m) => Math.max(0, ...m.values())).join(' ')}`,
    );
    for (const m of logs) console.log(JSON.stringify(Object.fromEntries(m)));
    // The Redis lines of one gateway, as an operator reads them.
    console.log(
      gateways[0]
        .stdout()
        .split('\n')
        .filter((l) => /"msg":"(redis|[a-z ]+store[a-z ]+)"/.test(l))
        .map((l) => l.replace(/"(level|time|pid|hostname)":[^,]*,/g, ''))
        .join('\n'),
    );
    expect(healthyFailed).toEqual([]);
    expect([...executions.values()].every((n) => n === 1)).toBe(true);
    // Recovered without a restart: nothing failed in the last seconds, once the cluster was ok.
    expect(failed.filter((s) => s.at > okAt + 2_000)).toEqual([]);
    expect(openHealthy.every(([, n]) => n === OPEN_LIMIT)).toBe(true);
    for (const m of logs) expect(Math.max(0, ...m.values())).toBeLessThanOrEqual(100);
  }, 120_000);
});
