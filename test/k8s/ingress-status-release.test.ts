/**
 * An Ingress that leaves Sluice's classes loses the address Sluice wrote in its
 * status.loadBalancer, as ingress-nginx clears the Ingresses it stops serving (a real API server,
 * KUBECONFIG, and a real controller with --publish-service; no data plane is needed for status):
 * moved to another ingressClassName, or its legacy class annotation removed, the address goes;
 * an address another controller wrote, on its own Ingress or after taking one over, stays.
 */
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Controller } from '../../controller/main.ts';
import { crdsAndNamespace, startControllerIn } from '../helpers/controller-on-kapi.ts';
import { deleteAll, kubectl, ok } from '../helpers/kubectl.ts';
import { waitFor } from '../helpers/until.ts';

const NS = `sluice-ingress-release-${randomBytes(3).toString('hex')}`;
const SLUICE = '[{"ip":"10.96.0.8"}]';
const NGINX = '[{"ip":"198.51.100.1"}]';

let controller: Controller;

const apply = (yaml: string) => ok(['apply', '-n', NS, '-f', '-'], yaml);
const shown = async (name: string) => {
  const ing = JSON.parse(await ok(['get', 'ingress', name, '-n', NS, '-o', 'json'])) as {
    status?: { loadBalancer?: { ingress?: unknown[] } };
  };
  return JSON.stringify(ing.status?.loadBalancer?.ingress ?? []);
};
const waitShown = (name: string, value: string) =>
  waitFor(
    `${name} shows ${value}`,
    () => shown(name),
    (v) => v === value,
  );
/** Writes an Ingress's address as another controller would. */
const writeAddress = (name: string, value: string) =>
  ok([
    'patch',
    'ingress',
    name,
    '-n',
    NS,
    '--subresource=status',
    '--type=merge',
    '-p',
    JSON.stringify({ status: { loadBalancer: { ingress: JSON.parse(value) } } }),
  ]);
const ingress = (name: string, classed: string) => `
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: { name: ${name}${classed.startsWith('annotation') ? `, annotations: { kubernetes.io/ingress.class: sluice }` : ''} }
spec:
  ${classed.startsWith('annotation') ? '' : `ingressClassName: ${classed}`}
  defaultBackend: { service: { name: web, port: { number: 80 } } }
`;

beforeAll(async () => {
  await crdsAndNamespace(NS);
  await apply(`
apiVersion: v1
kind: Service
metadata: { name: sluice-proxy }
spec: { clusterIP: 10.96.0.8, ports: [{ name: http, port: 80, targetPort: 8080 }] }
---
apiVersion: v1
kind: Service
metadata: { name: web }
spec: { ports: [{ name: http, port: 80, targetPort: 3000 }] }
---
${ingress('moved', 'sluice')}
---
${ingress('legacy', 'annotation')}
---
${ingress('handed-over', 'sluice')}
---
${ingress('theirs', 'nginx')}
`);
  await writeAddress('theirs', NGINX);
  controller = await startControllerIn(NS, 'release-token', 'sluice-ingress-release', {
    publishService: `${NS}/sluice-proxy`,
    resyncMs: 500,
  });
  for (const name of ['moved', 'legacy', 'handed-over']) await waitShown(name, SLUICE);
}, 60_000);

afterAll(async () => {
  await controller?.close();
  // kapi leaves a deleted namespace's objects in place: a later controller watching every namespace would serve these.
  await deleteAll('ingress', NS).catch(() => '');
  await kubectl(['delete', 'namespace', NS, '--wait=false']);
});

it('moved to another ingressClassName, an Ingress loses the address Sluice wrote', async () => {
  await ok([
    'patch',
    'ingress',
    'moved',
    '-n',
    NS,
    '--type=merge',
    '-p',
    '{"spec":{"ingressClassName":"nginx"}}',
  ]);
  await waitShown('moved', '[]');
  // Moved back, it shows the address again.
  await ok([
    'patch',
    'ingress',
    'moved',
    '-n',
    NS,
    '--type=merge',
    '-p',
    '{"spec":{"ingressClassName":"sluice"}}',
  ]);
  await waitShown('moved', SLUICE);
});

it('its legacy class annotation removed, an Ingress loses the address Sluice wrote', async () => {
  await ok(['annotate', 'ingress', 'legacy', '-n', NS, 'kubernetes.io/ingress.class-']);
  await waitShown('legacy', '[]');
});

it("another controller's address stays: on its own Ingress, and on one it took over and wrote first", async () => {
  // Taken over: the other controller writes its address before Sluice sees the class change.
  await writeAddress('handed-over', NGINX);
  await ok([
    'patch',
    'ingress',
    'handed-over',
    '-n',
    NS,
    '--type=merge',
    '-p',
    '{"spec":{"ingressClassName":"nginx"}}',
  ]);
  // Builds have run since (resync every 500 ms; the class change is one): still theirs.
  await sleep(2_000);
  expect(await shown('handed-over')).toBe(NGINX);
  expect(await shown('theirs')).toBe(NGINX);
});
