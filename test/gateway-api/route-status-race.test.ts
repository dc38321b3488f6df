/**
 * An HTTPRoute's status.parents is shared with other controllers: Sluice writes it with PUT and
 * the resourceVersion it read, so a write racing another controller's is refused (409) rather
 * than erasing it, and is made again from the informer cache, keeping the entry written
 * meanwhile. On a real API server (KUBECONFIG) with the upstream CRDs: the Gateway API writer
 * as the runner wires it (its source, the Services informer, a build), through a Kube whose
 * first status PUT is preceded by another controller's write, as a race would have it.
 */
import { randomBytes } from 'node:crypto';
import { expect, it } from 'vitest';
import { Kube, loadKubeConfig } from '../../controller/source/kube.ts';
import { raceFixture } from '../helpers/gateway-api/writer.ts';
import { ok } from '../helpers/kubectl.ts';
import { until } from '../helpers/until.ts';

const ID = randomBytes(3).toString('hex');
const NS = `sluice-race-${ID}`;
const CLASS = `sluice-race-${ID}`;
const OTHER = 'example.com/other-controller';
const ROUTE_STATUS = `/apis/gateway.networking.k8s.io/v1/namespaces/${NS}/httproutes/web/status`;

const theirs = (message: string) => ({
  parentRef: { name: 'their-gw' },
  controllerName: OTHER,
  conditions: [
    {
      type: 'Accepted',
      status: 'True',
      reason: 'Accepted',
      message,
      observedGeneration: 1,
      lastTransitionTime: '2025-01-01T00:00:00Z',
    },
  ],
});

/** A real Kube whose first HTTPRoute status PUT comes just after another controller's own write. */
class Racing extends Kube {
  puts: number[] = [];
  raced = false;
  override async request<T>(method: string, path: string, body?: unknown, type?: string): Promise<T> {
    if (method === 'PUT' && path === ROUTE_STATUS && !this.raced) {
      this.raced = true;
      // The other controller writes with kubectl: this controller's Kube may not merge-patch it.
      const patch = JSON.stringify({ status: { parents: [theirs('raced')] } });
      await ok(['patch', 'httproute', 'web', '-n', NS, '--subresource=status', '--type=merge', '-p', patch]);
    }
    try {
      const out = await super.request<T>(method, path, body, type);
      if (method === 'PUT' && path === ROUTE_STATUS) this.puts.push(200);
      return out;
    } catch (err) {
      if (method === 'PUT' && path === ROUTE_STATUS) this.puts.push((err as { status: number }).status);
      throw err;
    }
  }
}

const fixture = raceFixture(
  NS,
  CLASS,
  `
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: { name: web, namespace: ${NS} }
spec:
  parentRefs: [{ name: gw }, { name: their-gw }]
  rules: [{ matches: [{ path: { type: PathPrefix, value: /shop } }] }]
`,
);

it("a status write that races another controller's is refused (409), made again from the cache, and keeps that controller's entry", async () => {
  const kube = new Racing(loadKubeConfig());
  const wired = await fixture.wire(kube, 3);
  wired.build();
  wired.writer.setActive(true);
  wired.writer.update([], null);
  type Parents = { status?: { parents?: { controllerName: string; conditions: { message: string }[] }[] } };
  const parents = async () =>
    (JSON.parse(await ok(['get', 'httproute', 'web', '-n', NS, '-o', 'json'])) as Parents).status?.parents ??
    [];
  await until(
    async () => (await parents()).some((p) => p.controllerName === 'sluice.dev/gateway-controller'),
    20_000,
    50,
  );
  expect(kube.puts[0]).toBe(409);
  expect(kube.puts.at(-1)).toBe(200);
  const shown = await parents();
  expect(shown.map((p) => p.controllerName)).toEqual([OTHER, 'sluice.dev/gateway-controller']);
  expect(shown[0].conditions[0].message).toBe('raced');
});
