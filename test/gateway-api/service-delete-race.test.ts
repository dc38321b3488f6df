/**
 * A Gateway moved to another installation's class: the old installation deletes the Gateway's
 * Service, the new one takes it over (PUT, its own controllerName on it). When the takeover lands
 * between the old one's look at the Service and its delete, the delete must not remove the
 * Service the new installation now holds: it names the resourceVersion it looked at, gets 409, and
 * on a second look leaves the Service alone (it is not its own any more). On a real API server
 * (KUBECONFIG) with the upstream CRDs: the old installation is the Gateway API writer as the runner
 * wires it; the new one's takeover is a kubectl patch, made by a Kube just before it sends the
 * old one's DELETE.
 */
import { randomBytes } from 'node:crypto';
import { expect, it } from 'vitest';
import { Kube, loadKubeConfig } from '../../controller/source/kube.ts';
import { CONTROLLER_NAME_ANNOTATION } from '../../controller/status/gateway-services.ts';
import { raceFixture } from '../helpers/gateway-api/writer.ts';
import { ok } from '../helpers/kubectl.ts';
import { until } from '../helpers/until.ts';

const ID = randomBytes(3).toString('hex');
const NS = `sluice-svc-delete-${ID}`;
const CLASS = `sluice-svc-delete-${ID}`;
const SERVICE = 'sluice-gateway-gw';
const SERVICE_PATH = `/api/v1/namespaces/${NS}/services/${SERVICE}`;
const OTHER = `example.com/other-installation-${ID}`;

/** A real Kube in front of whose first DELETE of the Service the other installation takes it over. */
class TakenOver extends Kube {
  /** The answers to the DELETEs of the Service: 200 or the error's status. */
  deletes: number[] = [];
  override async request<T>(method: string, path: string, body?: unknown, type?: string): Promise<T> {
    if (method !== 'DELETE' || path !== SERVICE_PATH) return super.request<T>(method, path, body, type);
    if (this.deletes.length === 0) {
      const patch = JSON.stringify({ metadata: { annotations: { [CONTROLLER_NAME_ANNOTATION]: OTHER } } });
      await ok(['patch', 'service', SERVICE, '-n', NS, '--type', 'merge', '-p', patch]);
    }
    try {
      const out = await super.request<T>(method, path, body, type);
      this.deletes.push(200);
      return out;
    } catch (err) {
      this.deletes.push((err as { status: number }).status);
      throw err;
    }
  }
}

const fixture = raceFixture(NS, CLASS);

it("a delete that races the other installation's takeover is refused (409), and the Service stays the other's", async () => {
  const kube = new TakenOver(loadKubeConfig());
  const w = await fixture.wire(kube, 2);
  w.writer.setActive(true);
  w.build();
  const cached = () => w.services.cache.get(`${NS}/${SERVICE}`);
  await until(() => cached() !== undefined, 20_000, 50);

  // The Gateway moves to a class of another controllerName: this installation no longer serves it.
  const moved = `other-class-${ID}`;
  await ok([
    'patch',
    'gateway',
    'gw',
    '-n',
    NS,
    '--type',
    'merge',
    '-p',
    `{"spec":{"gatewayClassName":"${moved}"}}`,
  ]);
  const classOf = () =>
    (w.source.objects().find((o) => o.kind === 'Gateway') as { spec?: { gatewayClassName?: string } })?.spec
      ?.gatewayClassName;
  await until(() => classOf() === moved, 20_000, 50);
  w.build();
  await until(() => kube.deletes.length > 0, 20_000, 50);
  await until(() => cached()?.metadata.annotations?.[CONTROLLER_NAME_ANNOTATION] === OTHER, 20_000, 50);
  // Retried after its backoff (200 ms): by then the cache shows the other's annotation.
  await new Promise((r) => setTimeout(r, 1_500));
  expect(kube.deletes).toEqual([409]);
  const shown = JSON.parse(await ok(['get', 'service', SERVICE, '-n', NS, '-o', 'json'])) as {
    metadata: { annotations?: Record<string, string> };
  };
  expect(shown.metadata.annotations?.[CONTROLLER_NAME_ANNOTATION]).toBe(OTHER);
});
