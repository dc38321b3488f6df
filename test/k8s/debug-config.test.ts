/**
 * GET /debug/config on the controller's metrics port, on a real API server (KUBECONFIG): the
 * controller (startController, the same wiring as `sluice controller`) builds objects whose
 * plugins and TLS reference Secrets and pushes the snapshot to a data plane found through an
 * EndpointSlice. The controller's answer needs the admin token, holds no Secret value, and its
 * hash is the one the pod runs: an operator can diff the two answers.
 */
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Controller } from '../../controller/main.ts';
import { crdsAndNamespace, dataplaneAdminObjects, startControllerIn } from '../helpers/controller-on-kapi.ts';
import { debugConfigObjects, expectRedacted, TLS_HOST } from '../helpers/debug-config.ts';
import { ok } from '../helpers/kubectl.ts';
import type { DataPlane } from '../../dataplane/main.ts';
import { freePort, startTestDataPlane, startUpstream, type Upstream } from '../helpers/servers.ts';
import { type Leaf, makePki, type Pki } from '../tls/pki.ts';

const NS = `sluice-debug-${randomBytes(3).toString('hex')}`;
const TOKEN = 'debug-admin-token';

let up: Upstream;
let pki: Pki;
let leaf: Leaf;
let dp: DataPlane;
let controller: Controller;

beforeAll(async () => {
  up = await startUpstream();
  pki = makePki();
  leaf = pki.leaf('site', [TLS_HOST]);
  const adminPort = await freePort();
  dp = await startTestDataPlane({ adminHost: '127.0.0.1', adminPort, adminToken: TOKEN });
  await crdsAndNamespace(NS);
  await ok(
    ['apply', '-n', NS, '-f', '-'],
    `${dataplaneAdminObjects(adminPort)}
---
${debugConfigObjects(leaf, up.url)}`,
  );
  controller = await startControllerIn(NS, TOKEN, 'sluice-debug');
}, 60_000);

afterAll(async () => {
  await controller?.close();
  await dp?.close();
  await up?.close();
  pki?.remove();
  await ok(['delete', 'namespace', NS, '--wait=false']).catch(() => {});
}, 30_000);

const get = (url: string, token?: string) =>
  fetch(url, token ? { headers: { authorization: `Bearer ${token}` } } : {});

describe('GET /debug/config (controller)', () => {
  it('needs the admin token', async () => {
    const none = await get(`${controller.metricsUrl}/debug/config`);
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toContain('Bearer');
    expect((await get(`${controller.metricsUrl}/debug/config`, 'wrong')).status).toBe(401);
    // The rest of the port stays open, as before.
    expect((await get(`${controller.metricsUrl}/metrics`)).status).toBe(200);
  });

  it('answers the built snapshot with Secrets redacted, and the hash the pod runs', async () => {
    const built = () => controller.runner.snapshot();
    const end = Date.now() + 20_000;
    // Built with all three routes and pushed: the pod runs the controller's hash.
    while ((built()?.table.routes.length !== 3 || dp.holder.hash !== built()?.hash) && Date.now() < end)
      await sleep(50);
    expect(controller.runner.lastBuild?.diagnostics).toEqual([]);
    expect(dp.holder.hash).toBe(built()?.hash);

    const res = await get(`${controller.metricsUrl}/debug/config`, TOKEN);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('application/json');
    const text = await res.text();
    expectRedacted(text, leaf);
    const pod = (await (await get(`${dp.adminUrl}/config`)).json()) as { hash: string };
    expect(JSON.parse(text).hash).toBe(pod.hash);

    // Both sides redact alike: what the controller built is byte for byte what the pod runs.
    const podDebug = await (await get(`${dp.adminUrl}/debug/config`, TOKEN)).text();
    expect(podDebug).toBe(text);
  });
});
