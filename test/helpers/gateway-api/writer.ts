/**
 * The Gateway API writer as the runner wires it, for tests that race its writes on a real API
 * server (test/gateway-api/*-race.test.ts): a GatewayApiSource and a Services informer on one
 * namespace, both through the test's Kube, the writer told of every Service event, and a build
 * of what they hold on demand. Without the rest of a controller: the test decides when a build
 * happens and when the writer leads.
 */
import { afterAll, beforeAll } from 'vitest';
import type { Service } from '../../../controller/api/service.ts';
import { build } from '../../../controller/build.ts';
import { GatewayApiSource } from '../../../controller/source/gateway-api-source.ts';
import type { ChangeType, KubeObject } from '../../../controller/source/informers.ts';
import type { Kube } from '../../../controller/source/kube.ts';
import { resourceSetFrom } from '../../../controller/source/resource-set.ts';
import { Watched } from '../../../controller/source/watched.ts';
import { GatewayApiWriter } from '../../../controller/status/gateway-api-writer.ts';
import { ok } from '../kubectl.ts';
import { until } from '../until.ts';
import { installGatewayApiCrds } from './crds.ts';

export type CachedService = Service & KubeObject;
type ServiceEvents = (type: ChangeType, obj: CachedService) => void;

export interface WriterOnKapi {
  writer: GatewayApiWriter;
  source: GatewayApiSource;
  services: Watched<CachedService>;
  /** Builds what the source and the informer hold and hands it to the writer (every Gateway listed). */
  build(): void;
  stop(): void;
}

/**
 * Starts the source and the informer, waits until they are synced and the source holds at least
 * `objects` objects, then makes the writer (not yet leading). `onService` sees each Service event
 * after the writer.
 */
async function writerOnKapi(
  kube: Kube,
  namespace: string,
  objects: number,
  onService: ServiceEvents = () => {},
): Promise<WriterOnKapi> {
  const source = new GatewayApiSource(
    kube,
    [namespace],
    () => {},
    () => ({}),
  );
  source.start();
  let writer: GatewayApiWriter | undefined;
  const services = new Watched<CachedService>(kube, 'services', [namespace], (type, obj) => {
    writer?.serviceObserved(type, obj);
    onService(type, obj);
  }).start();
  await Promise.all([source.synced, services.synced]);
  await until(() => source.listed && source.objects().length >= objects, 20_000, 50);
  const w = new GatewayApiWriter({
    kube,
    source,
    services: services.cache,
    service: { selector: {}, type: 'ClusterIP' },
  });
  writer = w;
  return {
    writer: w,
    source,
    services,
    build() {
      const result = build(
        resourceSetFrom([...source.objects(), ...services.cache.values()], { withServices: true }),
      );
      w.built(result.snapshot.hash, result.gatewayApi, true);
    },
    stop() {
      w.setActive(false);
      source.stop();
      services.stop();
    },
  };
}

/**
 * A race test file's fixture: before all, the namespace `ns` with a Gateway `gw` (one HTTP
 * listener, port 80) of a new GatewayClass `cls` of Sluice's default controllerName, and `more`
 * (YAML of further objects in `ns`); after all, the writer `wire` started stopped, and the class
 * and namespace deleted (kapi collects nothing: the class goes by itself).
 */
export function raceFixture(
  ns: string,
  cls: string,
  more = '',
): {
  /** writerOnKapi in `ns`, stopped after all. */
  wire(kube: Kube, objects: number, onService?: ServiceEvents): Promise<WriterOnKapi>;
} {
  let wired: WriterOnKapi | undefined;
  beforeAll(async () => {
    await installGatewayApiCrds();
    await ok(['create', 'namespace', ns]);
    await ok(
      ['apply', '-f', '-'],
      `
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: { name: ${cls} }
spec: { controllerName: sluice.dev/gateway-controller }
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: gw, namespace: ${ns} }
spec: { gatewayClassName: ${cls}, listeners: [{ name: http, protocol: HTTP, port: 80 }] }
${more ? `---\n${more}` : ''}`,
    );
  }, 60_000);
  afterAll(async () => {
    wired?.stop();
    await ok(['delete', 'gatewayclass', cls, '--wait=false']).catch(() => {});
    await ok(['delete', 'namespace', ns, '--wait=false']).catch(() => {});
  });
  return {
    wire: async (kube, objects, onService) => {
      wired = await writerOnKapi(kube, ns, objects, onService);
      return wired;
    },
  };
}
