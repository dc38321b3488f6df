/**
 * The informer against a real API server: a watch that comes back after its resourceVersion
 * was compacted away gets 410 Gone, re-lists, and loses no change (creations, updates and
 * deletions made while it was away are all reported). Needs an API server that compacts
 * quickly: kapi with KAPI_EXTRA_FLAGS=--etcd-compaction-interval=3s (as .ci/run starts it);
 * against a server that compacts slowly, the test waits up to a minute for the 410.
 */
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type ChangeType, Informer, type KubeObject } from '../../controller/source/informers.ts';
import { Kube, type KubeError, loadKubeConfig } from '../../controller/source/kube.ts';
import { deleteAll, ok } from '../helpers/kubectl.ts';

const NS = `sluice-informer-${randomBytes(3).toString('hex')}`;
const PATH = `/apis/sluice.dev/v1alpha1/namespaces/${NS}/gatewayplugins`;
const plugin = (name: string, value: string) => `
apiVersion: sluice.dev/v1alpha1
kind: GatewayPlugin
metadata: { name: ${name} }
spec: { plugin: request-transformer, requestTransformer: { add: { headers: ["X-V:${value}"] } } }
`;

let kube: Kube;
beforeAll(async () => {
  kube = new Kube(loadKubeConfig());
  await ok(['apply', '--server-side', '--force-conflicts', '-f', 'crds']);
  await ok(['wait', '--for=condition=Established', '--timeout=30s', 'crd/gatewayplugins.sluice.dev']);
  await ok(['create', 'namespace', NS]);
}, 60_000);
afterAll(async () => {
  await deleteAll('gatewayplugins', NS).catch(() => {});
});

it('after 410 Gone it re-lists and reports every change made while it was away', async () => {
  await ok(
    ['apply', '-n', NS, '-f', '-'],
    `${plugin('kept', '1')}---${plugin('edited', '1')}---${plugin('removed', '1')}`,
  );
  const events: [ChangeType, string][] = [];
  let lists = 0;
  // The backoff delay is the test's gate: while it is closed, the informer stays away.
  let open!: () => void;
  let gate: Promise<void> | null = null;
  const informer = new Informer<KubeObject & { spec: { requestTransformer: unknown } }>(
    kube,
    PATH,
    (type, obj) => events.push([type, obj.metadata.name]),
    { delay: () => gate ?? Promise.resolve(), onList: () => lists++ },
  ).start();
  try {
    await informer.synced;
    expect(lists).toBe(1);
    expect(events.map(([, n]) => n).sort()).toEqual(['edited', 'kept', 'removed']);
    gate = new Promise<void>((r) => {
      open = r;
    });
    informer.interrupt();
    // Wait until the watch is really down (the gate holds the informer), then note where it resumes.
    await new Promise((r) => setTimeout(r, 300));
    const seen = informer.resourceVersion;
    events.length = 0;
    await ok(['apply', '-n', NS, '-f', '-'], `${plugin('edited', '2')}---${plugin('added', '1')}`);
    await ok(['delete', 'gatewayplugin', 'removed', '-n', NS]);
    // Wait until the version the informer resumes from is compacted: a watch from it now gets 410.
    const until = Date.now() + 60_000;
    for (;;) {
      const gone = await new Promise<boolean>((resolve) => {
        kube
          .watch(
            PATH,
            seen,
            (e) => e.type === 'ERROR' && (e.object as { code?: number }).code === 410 && resolve(true),
            (err) =>
              resolve(
                (err as KubeError)?.status === 410 || (err as { statusCode?: number })?.statusCode === 410,
              ),
          )
          .then((w) =>
            setTimeout(() => {
              w.abort();
              resolve(false);
            }, 500),
          );
      });
      if (gone) break;
      if (Date.now() > until) throw new Error('the API server did not compact within 60 s');
      await sleep(500);
    }
    open();
    const deadline = Date.now() + 15_000;
    while (lists < 2 || !events.some(([t, n]) => t === 'deleted' && n === 'removed')) {
      if (Date.now() > deadline)
        throw new Error(`no relist after 410: lists ${lists}, events ${JSON.stringify(events)}`);
      await sleep(50);
    }
    expect(lists).toBe(2);
    expect(events).toContainEqual(['modified', 'edited']);
    expect(events).toContainEqual(['added', 'added']);
    expect(events).toContainEqual(['deleted', 'removed']);
    expect(events.some(([, n]) => n === 'kept')).toBe(false);
    expect([...informer.cache.keys()].sort()).toEqual([`${NS}/added`, `${NS}/edited`, `${NS}/kept`]);
    const edited = informer.cache.get(`${NS}/edited`)!;
    expect(JSON.stringify(edited.spec.requestTransformer)).toContain('X-V:2');
    // And it keeps watching from the new list: a later change arrives as an event.
    await ok(['apply', '-n', NS, '-f', '-'], plugin('late', '1'));
    const late = Date.now() + 10_000;
    while (!events.some(([t, n]) => t === 'added' && n === 'late')) {
      if (Date.now() > late) throw new Error('no event after the relist');
      await sleep(50);
    }
  } finally {
    informer.stop();
  }
}, 120_000);
