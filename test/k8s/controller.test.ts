/**
 * The controller end to end on a real API server (KUBECONFIG: kapi here, kind or a cluster
 * elsewhere): `sluice controller` processes, three `sluice dataplane` processes on 127.0.0.1,
 * .2 and .3 (same ports, as pods would have), an upstream on loopback, and objects applied with
 * kubectl. kapi runs no EndpointSlice controller, so the test writes the data plane's
 * EndpointSlice itself, as Kubernetes would for a headless Service. The first controller
 * exports its spans (OTEL_* in its environment) to an OTLP receiver on loopback: its build and
 * pushes are traced with the hash every pod then runs.
 *
 * Figures (apply-to-all-pods latency) are printed, not asserted beyond a generous bound.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deleteAll, ok } from '../helpers/kubectl.ts';
import { type OtlpReceiver, startOtlpReceiver } from '../helpers/otlp-receiver.ts';
import { type LaunchedProcess, launch, metricValue, stopAllSluice } from '../helpers/processes.ts';
import { freePort, startUpstream, type Upstream } from '../helpers/servers.ts';

const NS = `sluice-e2e-${randomBytes(3).toString('hex')}`;
const TOKEN = 'e2e-admin-token';
const HOSTS = ['127.0.0.1', '127.0.0.2', '127.0.0.3'];
const ROOT = join(import.meta.dirname, '..', '..');
const LAST_EDIT = 51;

let up: Upstream;
let receiver: OtlpReceiver;
let proxyPort: number;
let adminPort: number;
const planes = new Map<string, LaunchedProcess>();
const stateDirs = new Map<string, string>();

function startPlane(host: string): Promise<LaunchedProcess> {
  const dir = stateDirs.get(host) ?? mkdtempSync(join(tmpdir(), 'sluice-plane-'));
  stateDirs.set(host, dir);
  return launch(
    [
      'dataplane',
      '--host',
      host,
      '--port',
      String(proxyPort),
      '--admin-host',
      host,
      '--admin-port',
      String(adminPort),
      '--admin-token',
      TOKEN,
      '--state-dir',
      dir,
      '--log-level',
      'warn',
      '--no-access-log',
      '--drain-timeout-ms',
      '1000',
    ],
    `http://${host}:${adminPort}/healthz`,
    null,
    { what: `sluice dataplane on ${host}`, readyTimeoutMs: 30_000 },
  );
}

async function startController(
  identity: string,
  logLevel = 'warn',
  env: NodeJS.ProcessEnv = {},
): Promise<{ proc: LaunchedProcess; metrics: string }> {
  const port = await freePort();
  const proc = await launch(
    [
      'controller',
      '--dataplane-service',
      `${NS}/sluice-admin`,
      '--admin-token',
      TOKEN,
      '--metrics-host',
      '127.0.0.1',
      '--metrics-port',
      String(port),
      '--lease-seconds',
      '3',
      '--identity',
      identity,
      '--log-level',
      logLevel,
    ],
    `http://127.0.0.1:${port}/readyz`,
    null,
    { what: `sluice controller ${identity}`, readyTimeoutMs: 30_000, env },
  );
  return { proc, metrics: `http://127.0.0.1:${port}` };
}

const metric = async (base: string, name: string, labels: Record<string, string> = {}) =>
  metricValue(await (await fetch(`${base}/metrics`)).text(), name, labels);

/** Status of GET <path> on every data plane's proxy port. */
async function statuses(path: string, headers: Record<string, string> = {}): Promise<number[]> {
  return Promise.all(
    HOSTS.map((h) =>
      fetch(`http://${h}:${proxyPort}${path}`, { headers }).then(
        async (r) => {
          await r.arrayBuffer();
          return r.status;
        },
        () => 0,
      ),
    ),
  );
}

async function until<T>(
  what: string,
  probe: () => Promise<T>,
  good: (v: T) => boolean,
  ms = 15_000,
): Promise<T> {
  const end = Date.now() + ms;
  let last: T = await probe();
  while (!good(last)) {
    if (Date.now() > end)
      throw new Error(`timed out after ${ms} ms waiting for ${what}; last: ${JSON.stringify(last)}`);
    await sleep(50);
    last = await probe();
  }
  return last;
}

const apply = (yaml: string) => ok(['apply', '-n', NS, '-f', '-'], yaml);

async function conditions(
  kind: string,
  name: string,
): Promise<Record<string, { status: string; message: string; reason: string }>> {
  const out = await ok(['get', kind, name, '-n', NS, '-o', 'json']);
  const obj = JSON.parse(out) as {
    status?: { conditions?: { type: string; status: string; message: string; reason: string }[] };
  };
  return Object.fromEntries((obj.status?.conditions ?? []).map((c) => [c.type, c]));
}

const route = (name: string, path: string, plugins: string[] = [], extra = '') => `
apiVersion: sluice.dev/v1alpha1
kind: GatewayRoute
metadata: { name: ${name} }
spec:
  service: { name: ${name}, url: "${up.url}" }
  plugins: [${plugins.map((p) => `{ name: ${p} }`).join(', ')}]
  routes:
    - { name: main, paths: ["${path}"]${extra} }
`;
const transformer = (name: string, value: string) => `
apiVersion: sluice.dev/v1alpha1
kind: GatewayPlugin
metadata: { name: ${name} }
spec: { plugin: request-transformer, requestTransformer: { add: { headers: ["X-E2E:${value}"] } } }
`;

/** The X-E2E header each data plane forwards on GET path. */
async function forwarded(path: string): Promise<(string | null)[]> {
  return Promise.all(
    HOSTS.map(async (h) => {
      const r = await fetch(`http://${h}:${proxyPort}${path}`).catch(() => null);
      if (r === null || r.status !== 200) return null;
      const body = (await r.json()) as { headers: Record<string, string> };
      return body.headers['x-e2e'] ?? '';
    }),
  );
}

beforeAll(async () => {
  up = await startUpstream();
  proxyPort = await freePort();
  adminPort = await freePort();
  await ok(['apply', '--server-side', '--force-conflicts', '-f', join(ROOT, 'crds')]);
  await ok([
    'wait',
    '--for=condition=Established',
    '--timeout=30s',
    'crd/gatewayroutes.sluice.dev',
    'crd/gatewayplugins.sluice.dev',
  ]);
  await ok(['create', 'namespace', NS]);
  for (const h of HOSTS) planes.set(h, await startPlane(h));
  await ok(
    ['apply', '-n', NS, '-f', '-'],
    `
apiVersion: v1
kind: Service
metadata: { name: sluice-admin }
spec: { clusterIP: None, ports: [{ name: admin, port: ${adminPort} }] }
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: { name: sluice-admin-abc, labels: { kubernetes.io/service-name: sluice-admin } }
addressType: IPv4
ports: [{ name: admin, port: ${adminPort} }]
endpoints:
${HOSTS.map((h, i) => `  - { addresses: ["${h}"], conditions: { ready: false }, targetRef: { kind: Pod, name: dataplane-${i + 1} } }`).join('\n')}
`,
  );
}, 60_000);

afterAll(async () => {
  await stopAllSluice();
  await up?.close();
  await receiver?.close();
  await deleteAll('gatewayroutes,gatewayplugins', NS).catch(() => {});
}, 30_000);

describe('sluice controller on a real API server', () => {
  let leader: { proc: LaunchedProcess; metrics: string };

  it('applied objects reach all three data planes; every object says Programmed, 3 of 3; the build and its pushes are traced with the hash the pods run', async () => {
    // The first controller exports its spans to a receiver, configured as an operator would.
    receiver = await startOtlpReceiver();
    leader = await startController('ctl-a', 'warn', {
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_BSP_SCHEDULE_DELAY: '50',
    });
    const t0 = Date.now();
    await apply(`${transformer('version', 'v1')}---${route('orders', '/e2e/orders', ['version'])}`);
    await until(
      'traffic on all pods',
      () => statuses('/e2e/orders/1'),
      (s) => s.every((x) => x === 200),
    );
    const ms = Date.now() - t0;
    expect(await forwarded('/e2e/orders/1')).toEqual(['v1', 'v1', 'v1']);
    for (const [kind, name] of [
      ['gwr', 'orders'],
      ['gwp', 'version'],
    ]) {
      const c = await until(
        `Programmed on ${name}`,
        () => conditions(kind, name),
        (c) => c.Programmed?.status === 'True',
      );
      expect(c.Accepted.status).toBe('True');
      expect(c.ResolvedRefs.status).toBe('True');
      expect(c.Programmed.message).toBe('Running on 3 of 3 pods.');
    }
    console.log(`[controller-e2e] kubectl apply → traffic on 3 of 3 pods in ${ms} ms`);
    expect(ms).toBeLessThan(10_000);

    // What every pod runs, and the spans of the build that made it and of its three pushes.
    const running = await Promise.all(
      HOSTS.map(async (h) => {
        const text = await (await fetch(`http://${h}:${adminPort}/metrics`)).text();
        return /sluice_config_info\{hash="([0-9a-f]+)"\} 1/.exec(text)?.[1];
      }),
    );
    const hash = running[0]!;
    expect(running).toEqual([hash, hash, hash]);
    const pushes = await until(
      'push spans for the 3 pods',
      async () =>
        receiver.spans.filter(
          (s) => s.name === 'controller push' && s.attributes['sluice.snapshot.hash'] === hash,
        ),
      (p) => new Set(p.map((s) => s.attributes['sluice.pod'])).size === 3,
    );
    const build = receiver.spans.find(
      (s) => s.name === 'controller build' && s.attributes['sluice.snapshot.hash'] === hash,
    );
    expect(build).toMatchObject({ service: 'sluice-controller' });
    // Each pod applied it (a later push of the same snapshot would say unchanged).
    const applied = pushes.filter((p) => p.attributes['sluice.push.result'] === 'applied');
    expect(new Set(applied.map((p) => p.attributes['sluice.pod'])).size).toBe(3);
    expect(pushes.every((p) => p.links.some((l) => l.spanId === build!.spanId))).toBe(true);
  }, 40_000);

  it('an edit changes behaviour on every pod; the figures of 50 edits', async () => {
    const applied: number[] = [];
    for (let i = 2; i <= LAST_EDIT; i++) {
      await apply(transformer('version', `v${i}`));
      const t0 = Date.now();
      await until(
        `v${i} everywhere`,
        () => forwarded('/e2e/orders/1'),
        (v) => v.every((x) => x === `v${i}`),
      );
      applied.push(Date.now() - t0);
    }
    applied.sort((a, b) => a - b);
    const q = (p: number) => applied[Math.min(applied.length - 1, Math.floor(p * applied.length))];
    console.log(
      `[controller-e2e] kubectl apply returned → all 3 pods changed: p50 ${q(0.5)} ms, p99 ${q(0.99)} ms, ` +
        `max ${applied.at(-1)} ms (${applied.length} edits; a lone edit builds at once; includes the watch event and the probe's 50 ms polling)`,
    );
  }, 120_000);

  it('a missing plugin reference: ResolvedRefs=False naming the field, the rest keeps serving; fixing it clears it', async () => {
    await apply(route('broken', '/e2e/broken', ['nope']));
    const c = await until(
      'ResolvedRefs=False',
      () => conditions('gwr', 'broken'),
      (c) => c.ResolvedRefs?.status === 'False',
    );
    expect(c.ResolvedRefs.reason).toBe('PluginNotFound');
    expect(c.ResolvedRefs.message).toContain('spec.plugins[0].name');
    expect(c.Programmed.status).toBe('False');
    expect(await statuses('/e2e/broken')).toEqual([404, 404, 404]);
    expect(await statuses('/e2e/orders/1')).toEqual([200, 200, 200]);
    // The transition is also an Event, for `kubectl describe`.
    await until(
      'a Warning Event on the route',
      async () => {
        const list = JSON.parse(await ok(['get', 'events', '-n', NS, '-o', 'json'])) as {
          items: {
            involvedObject: { name: string; kind: string };
            type: string;
            reason: string;
            message: string;
          }[];
        };
        return list.items.filter(
          (e) => e.involvedObject.kind === 'GatewayRoute' && e.involvedObject.name === 'broken',
        );
      },
      (events) =>
        events.some(
          (e) =>
            e.type === 'Warning' &&
            e.reason === 'PluginNotFound' &&
            e.message.includes('spec.plugins[0].name'),
        ),
    );
    await apply(transformer('nope', 'fixed'));
    const fixed = await until(
      'fixed',
      () => conditions('gwr', 'broken'),
      (c) => c.Programmed?.status === 'True',
    );
    expect(fixed.ResolvedRefs.status).toBe('True');
    expect(await forwarded('/e2e/broken')).toEqual(['fixed', 'fixed', 'fixed']);
  }, 40_000);

  it('a backendRef to a missing Service is BackendNotFound; creating the Service resolves it', async () => {
    await apply(`
apiVersion: sluice.dev/v1alpha1
kind: GatewayRoute
metadata: { name: by-service }
spec:
  service: { name: api, backendRef: { name: api-svc, port: 8080 } }
  routes: [{ name: main, paths: ["/e2e/by-service"] }]
`);
    const missing = await until(
      'BackendNotFound',
      () => conditions('gwr', 'by-service'),
      (c) => c.ResolvedRefs?.status === 'False',
    );
    expect(missing.ResolvedRefs.reason).toBe('BackendNotFound');
    expect(missing.ResolvedRefs.message).toContain('spec.service.backendRef.name');
    await apply(`
apiVersion: v1
kind: Service
metadata: { name: api-svc }
spec: { ports: [{ name: http, port: 8080 }] }
`);
    const found = await until(
      'resolved',
      () => conditions('gwr', 'by-service'),
      (c) => c.Programmed?.status === 'True',
    );
    expect(found.ResolvedRefs.status).toBe('True');
    await ok(['delete', 'gwr', 'by-service', '-n', NS]);
  }, 30_000);

  it('deleting a route removes it from every pod', async () => {
    await ok(['delete', 'gwr', 'broken', '-n', NS]);
    await until(
      '404 everywhere',
      () => statuses('/e2e/broken'),
      (s) => s.every((x) => x === 404),
    );
  }, 20_000);

  it('without the controller the pods keep serving; a pod restarted meanwhile serves its last good snapshot; a restarted controller pushes nothing to pods in sync', async () => {
    const pushesBefore = await metric(leader.metrics, 'sluice_controller_pushes_total');
    expect(pushesBefore).toBeGreaterThan(0);
    await leader.proc.kill('SIGKILL');
    expect(await statuses('/e2e/orders/1')).toEqual([200, 200, 200]);
    const h = HOSTS[1];
    await planes.get(h)!.stop();
    planes.set(h, await startPlane(h));
    await until(
      'the restarted pod serves',
      () => statuses('/e2e/orders/1'),
      (s) => s.every((x) => x === 200),
      10_000,
    );
    expect(await forwarded('/e2e/orders/1')).toEqual([`v${LAST_EDIT}`, `v${LAST_EDIT}`, `v${LAST_EDIT}`]);

    leader = await startController('ctl-a2', 'debug');
    await until(
      'leading',
      () => metric(leader.metrics, 'sluice_controller_leader'),
      (v) => v === 1,
      15_000,
    );
    await until(
      'pods seen in sync',
      () => metric(leader.metrics, 'sluice_controller_dataplane_pods', { state: 'in_sync' }),
      (v) => v === 3,
    );
    await sleep(500);
    const text = await (await fetch(`${leader.metrics}/metrics`)).text();
    expect(
      [
        metricValue(text, 'sluice_controller_pushes_total'),
        metricValue(text, 'sluice_controller_status_writes_total'),
      ],
      `a restarted controller must find every status already true; it wrote:\n${leader.proc
        .stdout()
        .split('\n')
        .filter((l) => l.includes('status written'))
        .join('\n')}`,
    ).toEqual([0, 0]);
  }, 60_000);

  it('two controllers: one pushes and writes status; kill it and the other takes over within seconds', async () => {
    const standby = await startController('ctl-b');
    await sleep(1_000);
    const leading = [
      await metric(leader.metrics, 'sluice_controller_leader'),
      await metric(standby.metrics, 'sluice_controller_leader'),
    ];
    expect(leading).toEqual([1, 0]);
    await apply(transformer('version', 'two'));
    await until(
      'two everywhere',
      () => forwarded('/e2e/orders/1'),
      (v) => v.every((x) => x === 'two'),
    );
    expect(await metric(standby.metrics, 'sluice_controller_pushes_total')).toBe(0);
    expect(await metric(standby.metrics, 'sluice_controller_status_writes_total')).toBe(0);

    await leader.proc.kill('SIGKILL');
    const t0 = Date.now();
    await until(
      'standby leads',
      () => metric(standby.metrics, 'sluice_controller_leader'),
      (v) => v === 1,
      15_000,
    );
    await apply(transformer('version', 'three'));
    await until(
      'three everywhere',
      () => forwarded('/e2e/orders/1'),
      (v) => v.every((x) => x === 'three'),
    );
    const ms = Date.now() - t0;
    console.log(
      `[controller-e2e] leader SIGKILLed → standby pushed a change to 3 pods after ${ms} ms (lease 3 s)`,
    );
    expect(ms).toBeLessThan(10_000);
    const c = await until(
      'Programmed by the new leader',
      () => conditions('gwp', 'version'),
      (c) => c.Programmed?.status === 'True',
    );
    expect(c.Programmed.message).toBe('Running on 3 of 3 pods.');
    // A graceful stop releases the Lease at once.
    leader = standby;
  }, 60_000);

  it('idle means idle: each pod is asked its hash at most once per resync interval (10 s), nothing is pushed, nothing logged', async () => {
    const adminRequests = async () =>
      Promise.all(
        HOSTS.map(async (h) => {
          const text = await (await fetch(`http://${h}:${adminPort}/metrics`)).text();
          return {
            get: metricValue(text, 'sluice_admin_requests_total', { method: 'GET', route: '/config' }),
            put: metricValue(text, 'sluice_admin_requests_total', { method: 'PUT', route: '/config' }),
          };
        }),
      );
    await sleep(500); // the takeover's own asks are over
    const before = await adminRequests();
    const pushes = await metric(leader.metrics, 'sluice_controller_pushes_total');
    const lines = leader.proc.stdout().split('\n').length + leader.proc.stderr().split('\n').length;
    await sleep(5_000);
    const after = await adminRequests();
    const asks = after.map((a, i) => a.get - before[i].get);
    console.log(`[controller-e2e] idle 5 s: GET /config per pod ${asks.join(', ')}`);
    // Before the fix (resyncMs: undefined over the default) ~3,000 asks a pod in 5 s.
    for (const n of asks) expect(n).toBeLessThanOrEqual(1);
    expect(after.map((a, i) => a.put - before[i].put)).toEqual([0, 0, 0]);
    expect(await metric(leader.metrics, 'sluice_controller_pushes_total')).toBe(pushes);
    expect(leader.proc.stdout().split('\n').length + leader.proc.stderr().split('\n').length).toBe(lines);
  }, 30_000);

  it('a dead pod still listed: a changed object says which pod and why, every failed attempt is counted, the log says it once', async () => {
    const dead = HOSTS[2];
    await planes.get(dead)!.kill('SIGKILL');
    const logBefore = leader.proc.stdout() + leader.proc.stderr();
    await apply(transformer('version', 'four'));
    const c = await until(
      'Pending on the dead pod',
      () => conditions('gwp', 'version'),
      (c) => c.Programmed?.status === 'False',
    );
    expect(c.Programmed.reason).toBe('Pending');
    expect(c.Programmed.message).toBe('Running on 2 of 3 pods; dataplane-3: connection refused.');
    // The route itself did not change: it stays as it was.
    expect((await conditions('gwr', 'orders')).Programmed.status).toBe('True');
    expect((await forwarded('/e2e/orders/1')).slice(0, 2)).toEqual(['four', 'four']);
    await sleep(3_000);
    const text = await (await fetch(`${leader.metrics}/metrics`)).text();
    expect(metricValue(text, 'sluice_controller_pushes_total', { result: 'error' })).toBeGreaterThan(0);
    // Attempts back off: 3 s of a dead pod is a handful of tries (it was ~2,500 before).
    expect(metricValue(text, 'sluice_controller_pushes_total', { result: 'error' })).toBeLessThan(12);
    expect(metricValue(text, 'sluice_controller_dataplane_pods', { state: 'failing' })).toBe(1);
    expect(metricValue(text, 'sluice_controller_dataplane_pods', { state: 'in_sync' })).toBe(2);
    expect(metricValue(text, 'sluice_controller_dataplane_pods', { state: 'behind' })).toBe(1);
    const log = (leader.proc.stdout() + leader.proc.stderr()).slice(logBefore.length);
    expect(log.split('\n').filter((l) => l.includes('data-plane pod failing')).length).toBe(1);

    planes.set(dead, await startPlane(dead));
    const back = await until(
      'Programmed on all three again',
      () => conditions('gwp', 'version'),
      (c) => c.Programmed?.status === 'True',
      20_000,
    );
    expect(back.Programmed.message).toBe('Running on 3 of 3 pods.');
    expect(await forwarded('/e2e/orders/1')).toEqual(['four', 'four', 'four']);
  }, 60_000);
});
