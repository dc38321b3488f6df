/**
 * A Gateway's own spec.infrastructure.parametersRef (GEP-1867) on a real API server
 * (KUBECONFIG) with the upstream standard CRDs, which keep the field: a ConfigMap in the
 * Gateway's namespace merged over its class's (its serviceType wins, the labels of both are
 * kept), changes to it followed; one that does not resolve or does not parse makes that Gateway
 * Accepted False InvalidParameters naming why, unserved, its Service kept as it is, while the
 * class's other Gateway stays Programmed and served. One controller of this process, one data
 * plane on 127.0.10.1.
 */
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Controller } from '../../controller/main.ts';
import type { DataPlane } from '../../dataplane/main.ts';
import {
  crdsAndNamespace,
  serviceWithPods,
  startControllerIn,
  startDataPlanesIn,
} from '../helpers/controller-on-kapi.ts';
import { installGatewayApiCrds } from '../helpers/gateway-api/crds.ts';
import { kubectlOnce, ok } from '../helpers/kubectl.ts';
import { until } from '../helpers/until.ts';

const ID = randomBytes(3).toString('hex');
const NS = `sluice-gwparams-${ID}`;
const CLASS = `gwparams-${ID}`;
const TOKEN = 'gw-params-token';
const HOST = '127.0.10.1';

interface Cond {
  type: string;
  status: string;
  reason: string;
  message: string;
}
interface Obj {
  metadata: { resourceVersion: string; labels?: Record<string, string> };
  spec: { type?: string; externalTrafficPolicy?: string; ports?: { port: number; targetPort: number }[] };
  status?: { conditions?: Cond[] };
}

const get = async (kind: string, name: string): Promise<Obj | null> => {
  const r = await kubectlOnce(['get', kind, name, '-n', NS, '-o', 'json']);
  if (r.code !== 0 && /NotFound/.test(r.stderr)) return null;
  if (r.code !== 0) throw new Error(r.stderr);
  return JSON.parse(r.stdout) as Obj;
};
const condition = async (gw: string, type: string) =>
  (await get('gateway', gw))?.status?.conditions?.find((c) => c.type === type);
const service = (gw: string) => get('service', `sluice-gateway-${gw}`);
const apply = (yaml: string) => ok(['apply', '-n', NS, '-f', '-'], yaml);
const configMap = (name: string, data: string) => `
apiVersion: v1
kind: ConfigMap
metadata: { name: ${name} }
data:
${data}
`;
const gateway = (name: string, params?: string) => `
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: ${name} }
spec:
  gatewayClassName: ${CLASS}
${params ? `  infrastructure: { parametersRef: { group: "", kind: ConfigMap, name: ${params} } }` : ''}
  listeners: [{ name: http, protocol: HTTP, port: 80 }]
`;
/** The data plane's answer on a Gateway's listener (its Service's targetPort on the pod's address). */
const status = async (gw: string): Promise<number> => {
  const port = (await service(gw))?.spec.ports?.[0]?.targetPort;
  return fetch(`http://${HOST}:${port}/`).then(
    (r) => r.status,
    () => 0,
  );
};

let planes: DataPlane[] = [];
let controller: Controller;

beforeAll(async () => {
  await installGatewayApiCrds();
  await crdsAndNamespace(NS);
  planes = await startDataPlanesIn(NS, [HOST], { adminToken: TOKEN });
  await apply(configMap('class-params', '  serviceType: NodePort\n  serviceLabels: "team: a"'));
  await apply(configMap('own-params', '  serviceType: LoadBalancer\n  serviceLabels: "tier: public"'));
  await ok(
    ['apply', '-f', '-'],
    `
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: { name: ${CLASS} }
spec:
  controllerName: sluice.dev/gateway-controller
  parametersRef: { group: "", kind: ConfigMap, name: class-params, namespace: ${NS} }
`,
  );
  // The back end answers from nowhere (no listener on 127.0.10.9:3000): a served Gateway answers 502/503.
  await apply(`${gateway('own', 'own-params')}---${gateway('plain')}---${gateway('later', 'later-params')}---
${serviceWithPods('web', [{ host: '127.0.10.9', port: 3000 }], 8080)}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: { name: web }
spec:
  parentRefs: [{ name: own }, { name: plain }, { name: later }]
  rules: [{ backendRefs: [{ name: web, port: 8080 }] }]
`);
  controller = await startControllerIn(NS, TOKEN, `sluice-gwparams-${ID}`, {
    gatewayApi: true,
    gatewayPorts: { first: 24_900, last: 24_949 },
    gatewayServiceType: 'ClusterIP',
    resyncMs: 500,
  });
  await until(async () => (await condition('plain', 'Programmed'))?.status === 'True', 30_000, 100);
}, 120_000);

afterAll(async () => {
  await controller?.close();
  await Promise.all(planes.map((p) => p.close()));
  await ok(['delete', 'gatewayclass', CLASS, '--wait=false']).catch(() => {});
  await ok(['delete', 'namespace', NS, '--wait=false']).catch(() => {});
}, 60_000);

describe("a Gateway's spec.infrastructure.parametersRef", () => {
  it("its ConfigMap is merged over the class's: its own serviceType, the labels of both; served", async () => {
    await until(async () => (await service('own'))?.spec.type === 'LoadBalancer', 20_000, 100);
    expect((await service('own'))!.metadata.labels).toEqual({
      'gateway.networking.k8s.io/gateway-name': 'own',
      team: 'a',
      tier: 'public',
    });
    expect((await service('plain'))!.spec.type).toBe('NodePort');
    await until(async () => (await condition('own', 'Programmed'))?.status === 'True', 20_000, 100);
    expect(await condition('own', 'Accepted')).toMatchObject({ status: 'True', reason: 'Accepted' });
    expect([502, 503]).toContain(await status('own'));
  });

  it('a change to its ConfigMap changes its Service alone', async () => {
    const plain = (await service('plain'))!.metadata.resourceVersion;
    await apply(configMap('own-params', '  serviceType: ClusterIP\n  serviceLabels: "team: b"'));
    await until(async () => (await service('own'))?.spec.type === 'ClusterIP', 20_000, 100);
    expect((await service('own'))!.metadata.labels?.team).toBe('b');
    expect((await service('plain'))!.metadata.resourceVersion).toBe(plain);
  });

  it('a ConfigMap that does not exist: InvalidParameters naming it, the other Gateways served; created, it is accepted and served', async () => {
    await until(
      async () => (await condition('later', 'Accepted'))?.reason === 'InvalidParameters',
      20_000,
      100,
    );
    expect(await condition('later', 'Accepted')).toMatchObject({
      status: 'False',
      message: `spec.infrastructure.parametersRef: ConfigMap ${NS}/later-params not found (it must be in a namespace the controller watches)`,
    });
    // Never accepted: no Service made for it, nothing served.
    expect(await service('later')).toBeNull();
    expect(await condition('plain', 'Programmed')).toMatchObject({ status: 'True' });
    expect([502, 503]).toContain(await status('plain'));
    await apply(configMap('later-params', '  serviceType: NodePort'));
    await until(async () => (await condition('later', 'Accepted'))?.status === 'True', 20_000, 100);
    await until(async () => (await condition('later', 'Programmed'))?.status === 'True', 20_000, 100);
    expect((await service('later'))!.spec.type).toBe('NodePort');
    expect([502, 503]).toContain(await status('later'));
  });

  it('a bad value: that Gateway is InvalidParameters naming the key, unserved, its Service kept; the others unaffected; fixed, served again', async () => {
    const kept = (await service('own'))!;
    await apply(configMap('own-params', '  serviceType: Ingress'));
    await until(async () => (await condition('own', 'Accepted'))?.status === 'False', 20_000, 100);
    expect(await condition('own', 'Accepted')).toMatchObject({
      reason: 'InvalidParameters',
      message: `ConfigMap ${NS}/own-params key serviceType: "Ingress" is not ClusterIP, LoadBalancer, NodePort`,
    });
    const port = kept.spec.ports![0].targetPort;
    await until(
      async () => !(controller.runner.snapshot()?.table.listeners ?? []).some((l) => l.port === port),
      20_000,
      100,
    );
    await until(async () => (await status('own')) === 0, 10_000, 100); // the port is closed
    await sleep(1_000);
    expect((await service('own'))!.metadata.resourceVersion).toBe(kept.metadata.resourceVersion);
    expect(await condition('plain', 'Accepted')).toMatchObject({ status: 'True' });
    expect(await condition('plain', 'Programmed')).toMatchObject({ status: 'True' });
    expect([502, 503]).toContain(await status('plain'));
    await apply(configMap('own-params', '  serviceType: NodePort'));
    await until(async () => (await condition('own', 'Accepted'))?.status === 'True', 20_000, 100);
    await until(async () => (await service('own'))?.spec.type === 'NodePort', 20_000, 100);
    expect((await service('own'))!.spec.ports![0].targetPort).toBe(port);
    await until(async () => [502, 503].includes(await status('own')), 10_000, 100);
  });
});
