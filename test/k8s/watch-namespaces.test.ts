/**
 * --watch-namespaces on a real API server: the runner lists and watches routes, plugins,
 * Secrets and Services only in the namespaces it is given (namespaced paths, so a Role per
 * namespace suffices); an object in any other namespace is never seen, at start or later.
 */
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import pino from 'pino';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ControllerMetrics } from '../../controller/metrics.ts';
import { Runner } from '../../controller/runner.ts';
import { Kube, loadKubeConfig } from '../../controller/source/kube.ts';
import { Watched } from '../../controller/source/watched.ts';
import { deleteAll, ok } from '../helpers/kubectl.ts';

const id = randomBytes(3).toString('hex');
const [A, B, OTHER] = ['a', 'b', 'other'].map((n) => `sluice-ns-${n}-${id}`);
const route = (name: string) => `
apiVersion: sluice.dev/v1alpha1
kind: GatewayRoute
metadata: { name: ${name} }
spec:
  service: { name: ${name}, url: "http://127.0.0.1:9" }
  routes: [{ name: main, paths: ["/${name}"] }]
`;
const apply = (ns: string, yaml: string) => ok(['apply', '-n', ns, '-f', '-'], yaml);

let runner: Runner;
const sources = (r: Runner) =>
  (r.snapshot()?.table.routes ?? []).map((x) => `${x.source.namespace}/${x.source.name}`).sort();

beforeAll(async () => {
  await ok(['apply', '--server-side', '--force-conflicts', '-f', 'crds']);
  await ok(['wait', '--for=condition=Established', '--timeout=30s', 'crd/gatewayroutes.sluice.dev']);
  for (const ns of [A, B, OTHER]) {
    await ok(['create', 'namespace', ns]);
    await apply(ns, route(`r-${ns}`));
  }
}, 60_000);
afterAll(async () => {
  runner?.stop();
  for (const ns of [A, B, OTHER]) await deleteAll('gatewayroutes', ns).catch(() => {});
});

it('routes outside the watched namespaces are not seen, at start or when created later', async () => {
  runner = new Runner({
    kube: new Kube(loadKubeConfig()),
    log: pino({ level: 'silent' }),
    metrics: new ControllerMetrics(),
    dataplane: { namespace: A, service: 'sluice-admin' },
    adminToken: 't',
    holdoffMs: 10,
    watchNamespaces: [A, B],
  });
  await runner.start();
  const until = async (want: string[]) => {
    const end = Date.now() + 10_000;
    while (JSON.stringify(sources(runner)) !== JSON.stringify(want) && Date.now() < end) await sleep(50);
    return sources(runner);
  };
  expect(await until([`${A}/r-${A}`, `${B}/r-${B}`])).toEqual([`${A}/r-${A}`, `${B}/r-${B}`]);
  await apply(OTHER, route('late'));
  await apply(B, route('late'));
  const want = [`${A}/r-${A}`, `${B}/late`, `${B}/r-${B}`];
  expect(await until(want)).toEqual(want);
  // The route created in OTHER before the one in B would have been built by now, had it been seen.
  expect(sources(runner).some((s) => s.startsWith(OTHER))).toBe(false);
});

it('Secrets are listed and watched per namespace: one in another namespace is not in the cache', async () => {
  const secret = (name: string) =>
    `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"${name}"},"stringData":{"k":"v"}}`;
  await apply(A, secret('mine'));
  await apply(OTHER, secret('theirs'));
  const seen: string[] = [];
  const w = new Watched(new Kube(loadKubeConfig()), 'secrets', [A], (_t, o) =>
    seen.push(`${o.metadata.namespace}/${o.metadata.name}`),
  ).start();
  try {
    await w.synced;
    expect(w.cache.get(`${A}/mine`)?.metadata.name).toBe('mine');
    expect(w.cache.get(`${OTHER}/theirs`)).toBeUndefined();
    await apply(OTHER, secret('theirs-later'));
    await apply(A, secret('mine-later'));
    const end = Date.now() + 10_000;
    while (!seen.includes(`${A}/mine-later`) && Date.now() < end) await sleep(50);
    expect(seen).toContain(`${A}/mine-later`);
    expect(seen.filter((s) => s.startsWith(OTHER))).toEqual([]);
    expect([...w.cache.values()].every((s) => s.metadata.namespace === A)).toBe(true);
  } finally {
    w.stop();
  }
});
