/**
 * Events and status writes against a real API server, as an operator sees them in
 * `kubectl get events`: a repeated Event is one object whose count rises, an object gets at
 * most a burst of 25, progress is Normal; a status write the server refuses is retried with
 * backoff, and a write for an object gone meanwhile is dropped.
 */
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { Kube, loadKubeConfig } from '../../controller/source/kube.ts';
import { EventRecorder } from '../../controller/status/events.ts';
import { StatusWriter } from '../../controller/status/status-writer.ts';
import { deleteAll, ok } from '../helpers/kubectl.ts';

const NS = `sluice-events-${randomBytes(3).toString('hex')}`;
const ROUTE = `
apiVersion: sluice.dev/v1alpha1
kind: GatewayRoute
metadata: { name: r }
spec:
  service: { name: r, url: "http://127.0.0.1:9" }
  routes: [{ name: main, paths: ["/r"] }]
`;

interface Event {
  type: string;
  reason: string;
  count: number;
  message: string;
  involvedObject: { name: string };
}
const events = async (): Promise<Event[]> =>
  (JSON.parse(await ok(['get', 'events', '-n', NS, '-o', 'json'])) as { items: Event[] }).items;

let kube: Kube;
beforeAll(async () => {
  kube = new Kube(loadKubeConfig());
  await ok(['apply', '--server-side', '--force-conflicts', '-f', 'crds']);
  await ok(['wait', '--for=condition=Established', '--timeout=30s', 'crd/gatewayroutes.sluice.dev']);
  await ok(['create', 'namespace', NS]);
  await ok(['apply', '-n', NS, '-f', '-'], ROUTE);
}, 60_000);
afterAll(async () => {
  await deleteAll('gatewayroutes', NS).catch(() => {});
});

it('the same Event 30 times is one Event with count 25 (then the per-object spam filter); progress is Normal', async () => {
  const recorder = new EventRecorder(kube);
  const object = { kind: 'GatewayRoute', namespace: NS, name: 'r' };
  const fault = {
    type: 'ResolvedRefs',
    status: 'False',
    reason: 'SecretNotFound',
    message: 'Secret x not found',
  };
  for (let i = 0; i < 30; i++) await recorder.record(object, [fault]);
  const progress = {
    type: 'Programmed',
    status: 'False',
    reason: 'Pending',
    message: 'Running on 1 of 2 pods.',
  };
  const other = { kind: 'GatewayRoute', namespace: NS, name: 'other' };
  await recorder.record(other, [progress]);
  const list = await events();
  const faults = list.filter((e) => e.reason === 'SecretNotFound');
  expect(faults).toHaveLength(1);
  expect(faults[0]).toMatchObject({ type: 'Warning', count: 25 });
  expect(list.filter((e) => e.reason === 'Pending')).toMatchObject([
    { type: 'Normal', count: 1, involvedObject: { name: 'other' } },
  ]);
});

it('a burst of wanted statuses is written with at most 8 requests under way, none lost', async () => {
  const names = Array.from({ length: 40 }, (_, i) => `burst-${i}`);
  await ok(
    ['apply', '-n', NS, '-f', '-'],
    names.map((n) => ROUTE.replace('name: r }', `name: ${n} }`)).join('---\n'),
  );
  let inFlight = 0;
  let most = 0;
  class Counting extends Kube {
    override async request<T>(method: string, path: string, body?: unknown, type?: string): Promise<T> {
      if (method !== 'PATCH') return super.request<T>(method, path, body, type);
      most = Math.max(most, ++inFlight);
      try {
        return await super.request<T>(method, path, body, type);
      } finally {
        inFlight--;
      }
    }
  }
  const objects = new Map(
    (
      JSON.parse(await ok(['get', 'gwr', '-n', NS, '-o', 'json'])) as {
        items: { metadata: { name: string; resourceVersion: string } }[];
      }
    ).items.map((o) => [`GatewayRoute/${NS}/${o.metadata.name}`, o]),
  );
  let written = 0;
  const writer = new StatusWriter(new Counting(loadKubeConfig()), (key) => objects.get(key), {
    onWrite: (ok) => ok && written++,
  });
  writer.setActive(true);
  for (const n of names)
    writer.want({
      key: `GatewayRoute/${NS}/${n}`,
      observedGeneration: 1,
      conditions: [
        { type: 'Accepted', status: 'True', reason: 'Accepted', message: 'm', observedGeneration: 1 },
      ],
    });
  const end = Date.now() + 20_000;
  while (written < names.length && Date.now() < end) await sleep(50);
  expect(written).toBe(names.length);
  expect(most).toBeLessThanOrEqual(8);
  expect(most).toBeGreaterThan(1);
  writer.setActive(false);
});

it('a status write the server refuses is retried with backoff; one for an object deleted meanwhile is dropped', async () => {
  const current = JSON.parse(await ok(['get', 'gwr', 'r', '-n', NS, '-o', 'json']));
  const results: boolean[] = [];
  const writer = new StatusWriter(kube, () => current, { onWrite: (ok) => results.push(ok) });
  writer.setActive(true);
  // "Maybe" is not a condition status the CRD allows: the server answers 422, every time.
  writer.want({
    key: `GatewayRoute/${NS}/r`,
    observedGeneration: 1,
    conditions: [
      { type: 'Accepted', status: 'Maybe' as 'True', reason: 'R', message: 'm', observedGeneration: 1 },
    ],
  });
  await sleep(3_000);
  // 200, 400, 800, 1600 ms apart: 4 or 5 attempts in 3 s (every 200 ms would be 15).
  expect(results.every((r) => r === false)).toBe(true);
  expect(results.length).toBeGreaterThanOrEqual(3);
  expect(results.length).toBeLessThanOrEqual(5);
  writer.setActive(false);

  const gone: boolean[] = [];
  const missing = new StatusWriter(kube, () => current, { onWrite: (ok) => gone.push(ok) });
  missing.setActive(true);
  missing.want({
    key: `GatewayRoute/${NS}/deleted-meanwhile`,
    observedGeneration: 1,
    conditions: [
      { type: 'Accepted', status: 'True', reason: 'Accepted', message: 'm', observedGeneration: 1 },
    ],
  });
  await sleep(1_000);
  expect(gone).toEqual([false]); // 404: not retried
  missing.setActive(false);
});
