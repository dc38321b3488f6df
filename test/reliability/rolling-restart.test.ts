/**
 * A rolling restart of three gateways behind HAProxy (test/helpers/haproxy.ts: health checks on
 * each gateway's admin /readyz every 200 ms) under continuous load: 50 clients in a closed loop
 * through HAProxy, GET on a proxied route whose upstream takes ~5 ms (1 in 50: 1 s), so requests
 * are in flight at every moment. Each gateway is replaced in turn, two ways:
 *  (a) endpoint removal first, as a careful operator (or a preStop hook) does: its HAProxy
 *      server is set to maintenance, its sessions are waited out, then SIGTERM; a new gateway
 *      takes the slot (new ports, as a new pod gets a new address) and the slot is re-enabled;
 *  (b) plain SIGTERM relying on readiness, as a Deployment's rollout does (maxSurge 1,
 *      maxUnavailable 0): a new gateway in a spare slot, up in HAProxy; then the old one gets
 *      SIGTERM and nothing else: HAProxy must learn it from /readyz answering 503 while the old
 *      one still finishes its slow requests (marked down before it exits), and the old one must
 *      exit well before its drain timeout (10 s here).
 * Both: every request answered 200 (0 failed). Printed: requests, statuses, per restart the ms
 * from SIGTERM to HAProxy marking the server down and to the process's exit.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHaproxy, type TestHaproxy } from '../helpers/haproxy.ts';
import { failures, type Load, startLoad, statusLine } from '../helpers/load.ts';
import { type SluiceProcess, startSluice } from '../helpers/processes.ts';
import { startUpstream, type Upstream } from '../helpers/servers.ts';

const GATEWAYS = 3;
const CONCURRENCY = 50;
const STEADY_MS = 2_000;
const DRAIN_TIMEOUT_MS = 10_000;

const yaml = (port: number) => `
apiVersion: sluice.dev/v1alpha1
kind: GatewayRoute
metadata: { name: api }
spec:
  service: { name: up, url: "http://127.0.0.1:${port}" }
  routes:
    - { name: api, paths: ["/api"] }
`;

describe('rolling restart behind HAProxy under load', () => {
  let up: Upstream;
  beforeAll(async () => {
    up = await startUpstream((req, res) => {
      const ms = req.url?.startsWith('/api/slow') ? 1_000 : 5;
      setTimeout(() => res.writeHead(200, { 'content-type': 'text/plain' }).end('ok'), ms);
      return true;
    });
  });
  afterAll(async () => {
    await up?.close();
  });

  const gateway = () =>
    startSluice({
      yaml: yaml(up.port),
      args: ['--drain-timeout-ms', String(DRAIN_TIMEOUT_MS)],
      readyTimeoutMs: 30_000,
    });

  /** HAProxy with GATEWAYS + 1 slots (the last one spare), GATEWAYS gateways in rotation, load on. */
  async function setUp() {
    const hp = await startHaproxy(GATEWAYS + 1);
    const slots: (SluiceProcess | null)[] = await Promise.all(
      Array.from({ length: GATEWAYS }, () => gateway()),
    );
    slots.push(null);
    for (const [i, g] of slots.entries()) if (g !== null) await hp.put(i, g.proxyPort, g.adminPort);
    for (let i = 0; i < GATEWAYS; i++) await hp.waitStatus(i, 'UP');
    const load = startLoad({
      url: hp.url,
      concurrency: CONCURRENCY,
      next: (i) => ({ path: i % 50 === 0 ? `/api/slow/${i}` : `/api/items/${i}` }),
    });
    return { hp, slots, load };
  }

  async function tearDown(hp: TestHaproxy, slots: (SluiceProcess | null)[]) {
    await hp.stop();
    await Promise.allSettled(slots.map((g) => g?.stop()));
  }

  /** What one replacement took: SIGTERM → HAProxy marks it down (ms; NaN: set down by hand), → exit. */
  interface Restart {
    downMs: number;
    exitMs: number;
    exit: string;
  }
  const report = (name: string, load: Load, restarts: Restart[], ms: number) =>
    console.log(
      `[rolling-restart ${name}] ${load.done()} requests in ${Math.round(ms)} ms through HAProxy to ${GATEWAYS} gateways ` +
        `(${CONCURRENCY} clients), ${restarts.length} restarts; statuses ${statusLine(load.byStatus)}` +
        `${load.errors.size ? `; errors ${JSON.stringify(Object.fromEntries(load.errors))}` : ''}; ` +
        `failed ${failures(load.byStatus)}; per restart, SIGTERM → down in HAProxy / → exit (ms): ` +
        restarts
          .map(
            (r) =>
              `${Number.isNaN(r.downMs) ? '-' : Math.round(r.downMs)}/${Math.round(r.exitMs)} (${r.exit})`,
          )
          .join(', '),
    );

  it('(a) endpoint removal first (maintenance, sessions out, SIGTERM, new gateway, re-enable): 0 failed', async () => {
    const t0 = performance.now();
    const { hp, slots, load } = await setUp();
    const restarts: Restart[] = [];
    try {
      await sleep(STEADY_MS);
      for (let i = 0; i < GATEWAYS; i++) {
        const old = slots[i]!;
        await hp.state(i, 'maint');
        for (let n = 0; (await hp.stat(i)).scur > 0 && n < 250; n++) await sleep(20);
        const term = performance.now();
        void old.kill('SIGTERM');
        const [fresh, [exit, exitMs]] = await Promise.all([
          gateway(),
          old.exited.then((e) => [e, performance.now() - term] as const),
        ]);
        restarts.push({ downMs: Number.NaN, exitMs, exit: `${exit.code ?? exit.signal}` });
        slots[i] = fresh;
        await old.stop();
        await hp.put(i, fresh.proxyPort, fresh.adminPort);
        await hp.waitStatus(i, 'UP');
        await sleep(STEADY_MS / 2);
      }
      await sleep(STEADY_MS);
    } finally {
      await load.stop();
      report('a: endpoint removal first', load, restarts, performance.now() - t0);
      await tearDown(hp, slots);
    }
    expect(load.done()).toBeGreaterThan(1_000);
    expect(failures(load.byStatus)).toBe(0);
  }, 120_000);

  it('(b) plain SIGTERM relying on readiness (new gateway up first, then SIGTERM only): 0 failed, prompt exit', async () => {
    const t0 = performance.now();
    const { hp, slots, load } = await setUp();
    const restarts: Restart[] = [];
    try {
      await sleep(STEADY_MS);
      let spare = GATEWAYS;
      for (let i = 0; i < GATEWAYS; i++) {
        const fresh = await gateway();
        slots[spare] = fresh;
        await hp.put(spare, fresh.proxyPort, fresh.adminPort);
        await hp.waitStatus(spare, 'UP');
        const old = slots[i]!;
        const term = performance.now();
        void old.kill('SIGTERM');
        const [downMs, exit] = await Promise.all([
          hp.waitStatus(i, 'DOWN', DRAIN_TIMEOUT_MS + 5_000),
          old.exited,
        ]);
        restarts.push({ downMs, exitMs: performance.now() - term, exit: `${exit.code ?? exit.signal}` });
        await old.stop();
        // The pod is gone: its endpoint is deleted; its slot is the next spare.
        await hp.state(i, 'maint');
        slots[i] = null;
        spare = i;
        await sleep(STEADY_MS / 2);
      }
      await sleep(STEADY_MS);
    } finally {
      await load.stop();
      report('b: plain SIGTERM, readiness', load, restarts, performance.now() - t0);
      await tearDown(hp, slots);
    }
    expect(load.done()).toBeGreaterThan(1_000);
    expect(failures(load.byStatus)).toBe(0);
    // Out of rotation by readiness, and gone once its requests were done, not at the drain timeout.
    for (const r of restarts) {
      expect(r.exit).toBe('0');
      expect(r.downMs).toBeLessThan(r.exitMs);
      expect(r.exitMs).toBeLessThan(DRAIN_TIMEOUT_MS / 2);
    }
  }, 120_000);
});
