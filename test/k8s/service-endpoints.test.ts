/**
 * A GatewayRoute's backendRef on a real API server (KUBECONFIG): the controller reads the
 * Service's EndpointSlices and the data plane spreads requests over their ready endpoints (two
 * back ends on 127.0.0.1 and 127.0.0.2, one port, as two pods of a Service); an endpoint that
 * turns not ready leaves the snapshot and gets no more requests; spec.service.balance reaches the
 * data plane (consistent hashing on a header keeps each value on one endpoint). kapi runs no EndpointSlice
 * controller, so the test writes the slices as Kubernetes would.
 */
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Controller } from '../../controller/main.ts';
import type { DataPlane } from '../../dataplane/main.ts';
import { crdsAndNamespace, dataplaneAdminObjects, startControllerIn } from '../helpers/controller-on-kapi.ts';
import { ok } from '../helpers/kubectl.ts';
import { freePort, startTestDataPlane } from '../helpers/servers.ts';
import { until } from '../helpers/until.ts';

const NS = `sluice-endpoints-${randomBytes(3).toString('hex')}`;
const TOKEN = 'endpoints-admin-token';
const HOSTS = ['127.0.0.1', '127.0.0.2'];

let backends: Server[] = [];
let port: number;
let dp: DataPlane;
let controller: Controller;
const served = new Map<string, number>();

const slice = (ready: boolean[]) => `
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: { name: api-1, labels: { kubernetes.io/service-name: api } }
addressType: IPv4
ports: [{ name: http, port: ${port} }]
endpoints:
${HOSTS.map((h, i) => `  - { addresses: ["${h}"], conditions: { ready: ${ready[i]} } }`).join('\n')}
`;

beforeAll(async () => {
  // One port on both addresses: two pods of one Service.
  port = await freePort();
  backends = HOSTS.map((host) =>
    createServer((req, res) => {
      served.set(host, (served.get(host) ?? 0) + 1);
      req.resume();
      res.end(host);
    }).listen(port, host),
  );
  await Promise.all(backends.map((b) => once(b, 'listening')));
  const adminPort = await freePort();
  dp = await startTestDataPlane({ adminHost: '127.0.0.1', adminPort, adminToken: TOKEN });
  await crdsAndNamespace(NS);
  await ok(
    ['apply', '-n', NS, '-f', '-'],
    `${dataplaneAdminObjects(adminPort)}
---
apiVersion: v1
kind: Service
metadata: { name: api }
spec: { ports: [{ name: http, port: 80, targetPort: ${port} }] }
---
${slice([true, true])}
---
apiVersion: sluice.dev/v1alpha1
kind: GatewayRoute
metadata: { name: web }
spec:
  service: { name: api, backendRef: { name: api, port: 80 } }
  routes: [{ name: all, paths: ["/web"] }]
`,
  );
  controller = await startControllerIn(NS, TOKEN, 'sluice-endpoints');
}, 60_000);

afterAll(async () => {
  await controller?.close();
  await dp?.close();
  for (const b of backends) b.close();
  await ok(['delete', 'namespace', NS, '--wait=false']).catch(() => {});
}, 30_000);

/** Sends n requests to /web; resolves to who answered each. */
async function spread(n: number): Promise<string[]> {
  const out: string[] = [];
  for (let i = 0; i < n; i++) {
    const res = await request(`${dp.proxyUrl}/web`);
    out.push(res.statusCode === 200 ? await res.body.text() : `status ${res.statusCode}`);
    if (res.statusCode !== 200) await res.body.dump();
  }
  return out;
}

const upstreamEndpoints = () =>
  controller.runner.snapshot()?.table.upstreams.map((u) => u.endpoints?.map((e) => e.address));

describe('backendRef → EndpointSlices → the data plane balances', () => {
  it("requests are spread over the Service's ready endpoints, round robin", async () => {
    await until(
      () => dp.holder.hash !== '' && dp.holder.hash === controller.runner.lastBuild?.hash,
      20_000,
      50,
    );
    expect(upstreamEndpoints()).toEqual([HOSTS]);
    served.clear();
    const answers = await spread(20);
    expect(answers.filter((a) => a === HOSTS[0])).toHaveLength(10);
    expect(answers.filter((a) => a === HOSTS[1])).toHaveLength(10);
    expect(Object.fromEntries(served)).toEqual({ [HOSTS[0]]: 10, [HOSTS[1]]: 10 });
  });

  it('an endpoint that turns not ready leaves the snapshot: no request reaches it any more', async () => {
    await ok(['apply', '-n', NS, '-f', '-'], slice([true, false]));
    await until(
      () => upstreamEndpoints()?.[0]?.length === 1 && dp.holder.hash === controller.runner.lastBuild?.hash,
      20_000,
      50,
    );
    served.clear();
    expect(await spread(10)).toEqual(Array(10).fill(HOSTS[0]));
    expect(served.get(HOSTS[1])).toBeUndefined();
  });

  it('spec.service.balance consistent-hash on a header: each value keeps its endpoint', async () => {
    await ok(
      ['apply', '-n', NS, '-f', '-'],
      `${slice([true, true])}
---
apiVersion: sluice.dev/v1alpha1
kind: GatewayRoute
metadata: { name: web }
spec:
  service:
    name: api
    backendRef: { name: api, port: 80 }
    balance: { policy: consistent-hash, hashOn: { header: X-User } }
  routes: [{ name: all, paths: ["/web"] }]
`,
    );
    await until(
      () =>
        controller.runner.snapshot()?.table.upstreams[0]?.balance?.policy === 'consistent-hash' &&
        upstreamEndpoints()?.[0]?.length === 2 &&
        dp.holder.hash === controller.runner.lastBuild?.hash,
      20_000,
      50,
    );
    expect(controller.runner.snapshot()?.table.upstreams[0].balance).toEqual({
      policy: 'consistent-hash',
      hashOn: { header: 'x-user' },
    });
    const answer = async (user: string) => {
      const res = await request(`${dp.proxyUrl}/web`, { headers: { 'x-user': user } });
      expect(res.statusCode).toBe(200);
      return res.body.text();
    };
    const first = new Map<string, string>();
    for (let i = 0; i < 20; i++) first.set(`user-${i}`, await answer(`user-${i}`));
    for (const [user, host] of first) for (let j = 0; j < 3; j++) expect(await answer(user)).toBe(host);
    // Spread over both, not all on one.
    expect(new Set(first.values())).toEqual(new Set(HOSTS));
  });
});
