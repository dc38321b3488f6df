/**
 * A Gateway's Service deleted by someone else while the controller's write to it is on its way
 * back: the watch can show the write and then the deletion before the write's answer comes. The
 * controller must not take its own answer for the Service as it is now (it would see a Service
 * that is gone, and never make it again). On a real API server (KUBECONFIG) with the upstream
 * CRDs: the Gateway API writer as the runner wires it (its source, the Services informer, a build
 * again when the Service changes), through a Kube that answers its first PUT of the Service only
 * after that Service was deleted and the informer showed it. Seen once in CI, when a Gateway moved
 * to another installation's class: the old installation deleted the Service the new one had just
 * taken over.
 */
import { randomBytes } from 'node:crypto';
import { expect, it } from 'vitest';
import type { Service } from '../../controller/api/service.ts';
import { Kube, loadKubeConfig } from '../../controller/source/kube.ts';
import { raceFixture } from '../helpers/gateway-api/writer.ts';
import { ok } from '../helpers/kubectl.ts';
import { until } from '../helpers/until.ts';

const ID = randomBytes(3).toString('hex');
const NS = `sluice-svc-race-${ID}`;
const CLASS = `sluice-svc-race-${ID}`;
const SERVICE = 'sluice-gateway-gw';
const SERVICE_PATH = `/api/v1/namespaces/${NS}/services/${SERVICE}`;

let deletions = 0;

/** A real Kube that answers its first PUT of the Service only once someone deleted it and the watch showed that. */
class Late extends Kube {
  /** The Service writes sent, by method. */
  writes: string[] = [];
  held = false;
  override async request<T>(method: string, path: string, body?: unknown, type?: string): Promise<T> {
    // Counted when sent: the watch may show a write before its answer comes back here.
    if (path.startsWith(`/api/v1/namespaces/${NS}/services`) && method !== 'GET') this.writes.push(method);
    const out = await super.request<T>(method, path, body, type);
    if (method === 'PUT' && path === SERVICE_PATH && !this.held) {
      this.held = true;
      await ok(['delete', 'service', SERVICE, '-n', NS]);
      await until(() => deletions > 0, 10_000, 10);
    }
    return out;
  }
}

const fixture = raceFixture(NS, CLASS);

it('a Service deleted while the answer to our write to it is on its way is made again', async () => {
  const kube = new Late(loadKubeConfig());
  // As the runner does: a Gateway's Service (referenced for the Gateway's addresses) changing
  // builds again.
  const wired = await fixture.wire(kube, 2, (t, obj) => {
    if (t === 'deleted' && obj.metadata.name === SERVICE) {
      deletions++;
      wired.build();
    }
  });
  const { services } = wired;
  wired.writer.setActive(true);
  wired.build();
  const cached = () => services.cache.get(`${NS}/${SERVICE}`);
  await until(() => cached() !== undefined, 20_000, 50);
  const targetPort = cached()!.spec!.ports![0].targetPort;

  // Someone edits the Service; the next build puts it back (a PUT), and meanwhile it is deleted.
  const patch = '[{"op":"replace","path":"/spec/ports/0/targetPort","value":1234}]';
  await ok(['patch', 'service', SERVICE, '-n', NS, '--type', 'json', '-p', patch]);
  await until(() => cached()?.spec?.ports?.[0].targetPort === 1234, 20_000, 50);
  wired.build();
  await until(() => kube.held && deletions > 0, 20_000, 50);
  await until(() => cached()?.spec?.ports?.[0].targetPort === targetPort, 10_000, 50);
  expect(kube.writes).toEqual(['POST', 'PUT', 'POST']);
  const shown = JSON.parse(await ok(['get', 'service', SERVICE, '-n', NS, '-o', 'json'])) as Service;
  expect(shown.spec!.ports![0].targetPort).toBe(targetPort);
});
