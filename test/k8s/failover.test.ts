/**
 * A calm failover, as an operator runs one: 300 GatewayRoutes sharing a key-auth plugin (a
 * Secret listed, not watched arriving), two `sluice controller` processes, the leader SIGKILLed
 * with an edit pending. The standby takes over within the lease duration + 2 s, programs the
 * edit, and changes nothing else: the 299 other routes keep Programmed=True and its
 * lastTransitionTime, no Warning Event is written, the new leader writes one status.
 * Two data planes run in this process; the controllers are real processes.
 */
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { DataPlane } from '../../dataplane/main.ts';
import { deleteAll, ok } from '../helpers/kubectl.ts';
import { type LaunchedProcess, launch, metricValue, stopAllSluice } from '../helpers/processes.ts';
import { freePort, startTestDataPlane } from '../helpers/servers.ts';

const NS = `sluice-failover-${randomBytes(3).toString('hex')}`;
const TOKEN = 'test-admin-token';
const ROUTES = 300;
const LEASE_SECONDS = 3;
const planes: DataPlane[] = [];

const route = (i: number, path = `/r${i}`) => `apiVersion: sluice.dev/v1alpha1
kind: GatewayRoute
metadata: { name: r${i} }
spec:
  service: { name: r${i}, url: "http://127.0.0.1:9" }
  plugins: [{ name: keys }]
  routes: [{ name: main, paths: ["${path}"] }]
`;

async function controller(identity: string): Promise<{ proc: LaunchedProcess; metrics: string }> {
  const port = await freePort();
  const proc = await launch(
    [
      'controller',
      ...['--dataplane-service', `${NS}/sluice-admin`, '--admin-token', TOKEN],
      ...['--metrics-host', '127.0.0.1', '--metrics-port', String(port)],
      ...['--lease-seconds', String(LEASE_SECONDS), '--identity', identity, '--watch-namespaces', NS],
      ...['--log-level', 'warn'],
    ],
    `http://127.0.0.1:${port}/readyz`,
    null,
    { what: `sluice controller ${identity}`, readyTimeoutMs: 30_000 },
  );
  return { proc, metrics: `http://127.0.0.1:${port}` };
}

const metric = async (base: string, name: string, labels: Record<string, string> = {}) =>
  metricValue(await (await fetch(`${base}/metrics`)).text(), name, labels);

interface Cond {
  type: string;
  status: string;
  lastTransitionTime: string;
  observedGeneration: number;
}
/** Each route's Programmed condition, by name. */
async function programmed(): Promise<Map<string, Cond | undefined>> {
  const list = JSON.parse(await ok(['get', 'gwr', '-n', NS, '-o', 'json'])) as {
    items: { metadata: { name: string }; status?: { conditions?: Cond[] } }[];
  };
  return new Map(
    list.items.map((i) => [i.metadata.name, i.status?.conditions?.find((c) => c.type === 'Programmed')]),
  );
}

async function until<T>(what: string, probe: () => Promise<T>, good: (v: T) => boolean, ms = 30_000) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (good(v)) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

beforeAll(async () => {
  await ok(['apply', '--server-side', '--force-conflicts', '-f', 'crds']);
  await ok(['wait', '--for=condition=Established', '--timeout=30s', 'crd/gatewayroutes.sluice.dev']);
  await ok(['create', 'namespace', NS]);
  for (let i = 0; i < 2; i++) planes.push(await startTestDataPlane({ adminToken: TOKEN }));
  const docs = [
    `apiVersion: v1
kind: Secret
metadata: { name: api-keys }
stringData: { alice: alice-key-123 }
`,
    `apiVersion: sluice.dev/v1alpha1
kind: GatewayPlugin
metadata: { name: keys }
spec:
  plugin: key-auth
  keyAuth: { consumers: [{ name: alice, secretKeyRef: { name: api-keys, key: alice } }] }
`,
    ...planes.map(
      (p, i) => `apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: { name: sluice-admin-${i}, labels: { kubernetes.io/service-name: sluice-admin } }
addressType: IPv4
ports: [{ name: admin, port: ${new URL(p.adminUrl).port} }]
endpoints: [{ addresses: ["127.0.0.1"], targetRef: { kind: Pod, name: dataplane-${i} } }]
`,
    ),
    ...Array.from({ length: ROUTES }, (_, i) => route(i)),
  ];
  await ok(['apply', '-n', NS, '-f', '-'], docs.join('---\n'));
}, 90_000);

afterAll(async () => {
  await stopAllSluice();
  await Promise.all(planes.map((p) => p.close()));
  await deleteAll('gatewayroutes,gatewayplugins', NS).catch(() => {});
}, 60_000);

it('the leader SIGKILLed with an edit pending: takeover within lease + 2 s, the edit programmed, nothing else moves', async () => {
  const a = await controller('ctl-a');
  await until(
    'a leads',
    () => metric(a.metrics, 'sluice_controller_leader'),
    (v) => v === 1,
  );
  const before = await until(
    `${ROUTES} routes Programmed`,
    programmed,
    (m) => m.size === ROUTES && [...m.values()].every((c) => c?.status === 'True'),
    60_000,
  );
  const b = await controller('ctl-b');
  await sleep(1_500); // b has listed everything and built; it stands by

  await ok(['apply', '-n', NS, '-f', '-'], route(0, '/r0-edited'));
  await a.proc.kill('SIGKILL');
  const killed = Date.now();
  await until(
    'b leads',
    () => metric(b.metrics, 'sluice_controller_leader'),
    (v) => v === 1,
    15_000,
  );
  const takeover = Date.now() - killed;
  const after = await until(
    'the edit programmed',
    programmed,
    (m) => m.get('r0')?.status === 'True' && m.get('r0')?.observedGeneration === 2,
  );
  console.log(`[failover] leader SIGKILLed → standby leads after ${takeover} ms (lease ${LEASE_SECONDS} s)`);
  // The lease duration + 2 s, plus this test's 100 ms polling.
  expect(takeover).toBeLessThanOrEqual((LEASE_SECONDS + 2) * 1000 + 200);

  await sleep(1_000);
  const now = await programmed();
  const moved = [...now].filter(
    ([name, c]) =>
      name !== 'r0' &&
      (c?.status !== 'True' || c.lastTransitionTime !== before.get(name)?.lastTransitionTime),
  );
  expect(moved.map(([n]) => n)).toEqual([]);
  expect(after.get('r0')?.status).toBe('True');
  const warnings = (
    JSON.parse(await ok(['get', 'events', '-n', NS, '-o', 'json'])) as {
      items: { type: string; reason: string }[];
    }
  ).items.filter((e) => e.type === 'Warning');
  expect(warnings).toEqual([]);
  // The edited route, and perhaps the route again if a did not push the edit before it died.
  expect(
    await metric(b.metrics, 'sluice_controller_status_writes_total', { result: 'ok' }),
  ).toBeLessThanOrEqual(2);
  expect(await metric(b.metrics, 'sluice_controller_status_writes_total', { result: 'error' })).toBe(0);
}, 120_000);
