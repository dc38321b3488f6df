/**
 * Per-consumer analytics under `sluice run --workers 2 --analytics-consumers 3`, through the
 * real binary: each worker sees a different first three consumers (connections are dealt
 * round-robin, one request per connection), yet /metrics on the admin port names at most three
 * consumers in all, counts every other one as `other`, and each named consumer's count is all
 * of its requests, whichever worker answered them (both workers' series summed); nothing is
 * lost against the route's request count.
 */
import { mkdtemp, writeFile } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { fetchMetrics, type LaunchedProcess, launch, parseMetrics } from '../helpers/processes.ts';
import { freePort, startUpstream, type Upstream } from '../helpers/servers.ts';

const NAMES = ['c1', 'c2', 'c3', 'c4', 'c5', 'c6', 'c7', 'c8'];
const ROUTE = 'route/default/api/r/0';
let up: Upstream;
let gw: LaunchedProcess;
let proxy: string;
let admin: string;

const yaml = () => `apiVersion: v1
kind: Secret
metadata: { name: keys, namespace: default }
stringData:
${NAMES.map((n) => `  ${n}: key-${n}`).join('\n')}
---
apiVersion: sluice.dev/v1alpha1
kind: GatewayPlugin
metadata: { name: keys, namespace: default }
spec:
  plugin: key-auth
  keyAuth:
    consumers:
${NAMES.map((n) => `      - { name: ${n}, secretKeyRef: { name: keys, key: ${n} } }`).join('\n')}
---
apiVersion: sluice.dev/v1alpha1
kind: GatewayRoute
metadata: { name: api, namespace: default }
spec:
  service: { name: api, url: "${up.url}" }
  plugins: [{ name: keys }]
  routes: [{ name: r, paths: ["/api"] }]
`;

beforeAll(async () => {
  up = await startUpstream();
  const [port, adminPort] = [await freePort(), await freePort()];
  const dir = await mkdtemp(join(tmpdir(), 'sluice-analytics-workers-'));
  const file = join(dir, 'gateway.yaml');
  await writeFile(file, yaml());
  // Flags as an operator gives them.
  gw = await launch(
    [
      'run',
      '-f',
      file,
      '--host',
      '127.0.0.1',
      '--port',
      String(port),
      '--admin-port',
      String(adminPort),
      '--state-dir',
      join(dir, 'state'),
      '--admin-token',
      't',
      '--workers',
      '2',
      '--analytics-consumers',
      '3',
    ],
    `http://127.0.0.1:${adminPort}/readyz`,
    dir,
    { what: 'sluice run --workers 2 --analytics-consumers 3', readyTimeoutMs: 30_000 },
  );
  proxy = `http://127.0.0.1:${port}`;
  admin = `http://127.0.0.1:${adminPort}`;
}, 40_000);
afterAll(async () => {
  await gw?.stop();
  await up?.close();
});

const requestLines = () =>
  gw
    .stdout()
    .split('\n')
    .filter((l) => l.includes('"msg":"request"'))
    .map((l) => JSON.parse(l) as { pid: number; consumer?: string });

/** GET /api as consumer `name`, on a fresh connection (the primary deals connections round-robin). */
function get(name: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(`${proxy}/api`, { agent: false, headers: { 'x-api-key': `key-${name}` } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end();
  });
}

it('names at most N consumers across the workers, sums each one over both, and loses no request', async () => {
  // c1..c8, then c8..c1: with connections dealt in turn, each worker's first consumers differ
  // and each consumer's two requests go to different workers.
  const statuses: number[] = [];
  for (const n of [...NAMES, ...NAMES.toReversed()]) statuses.push(await get(n));
  expect(statuses).toEqual(Array(16).fill(200));
  // Both workers answered (the access-log lines carry their pid).
  await expect.poll(() => requestLines().length).toBe(16);
  expect(new Set(requestLines().map((l) => l.pid)).size).toBe(2);

  const samples = parseMetrics(await fetchMetrics(admin));
  const counts = samples.filter(
    (s) => s.name === 'sluice_consumer_request_duration_seconds_count' && s.labels.route === ROUTE,
  );
  const consumers = counts.map((s) => s.labels.consumer);
  const named = consumers.filter((c) => c !== 'other');
  expect(named.length).toBeLessThanOrEqual(3);
  expect(named.length).toBe(3); // eight consumers called: three named
  expect(named.every((c) => NAMES.includes(c))).toBe(true);
  // A named consumer's count is all its requests, whichever worker answered them.
  for (const c of named) expect(counts.find((s) => s.labels.consumer === c)?.value).toBe(2);
  expect(counts.find((s) => s.labels.consumer === 'other')?.value).toBe(10);
  const total = samples
    .filter((s) => s.name === 'sluice_requests_total' && s.labels.route === ROUTE)
    .reduce((a, s) => a + s.value, 0);
  expect(total).toBe(16);
  // Bytes too: named consumers and other only, the same set as the counts.
  const bytes = samples.filter(
    (s) =>
      s.name === 'sluice_consumer_bytes_total' && s.labels.route === ROUTE && s.labels.direction === 'out',
  );
  expect(bytes.map((s) => s.labels.consumer).sort()).toEqual([...consumers].sort());
});
