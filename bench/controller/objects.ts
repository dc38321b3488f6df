/**
 * The objects bench/controller.ts applies: N GatewayRoutes sharing one key-auth GatewayPlugin,
 * its Secret, and the data planes' headless Service and EndpointSlice.
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';

export const NS = `sluice-bench-${randomBytes(3).toString('hex')}`;
export const TOKEN = 'bench-admin-token';
export const HOSTS = ['127.0.0.2', '127.0.0.3'];
export const API_KEY = 'bench-key-0123456789';

export const routeName = (i: number) => `r-${String(i).padStart(5, '0')}`;
export function gatewayRoute(i: number, upstreamUrl: string, edit = 0) {
  const name = routeName(i);
  return {
    apiVersion: 'sluice.dev/v1alpha1',
    kind: 'GatewayRoute',
    metadata: { name, namespace: NS },
    spec: {
      service: { name, url: upstreamUrl },
      plugins: [{ name: 'api-key' }],
      routes: [{ name: 'main', paths: [`/${name}/a`, edit ? `/${name}/b${edit}` : `/${name}/b`] }],
    },
  };
}
export const fixedObjects = (adminPort: number) => [
  {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'api-keys', namespace: NS },
    stringData: { bench: API_KEY },
  },
  {
    apiVersion: 'sluice.dev/v1alpha1',
    kind: 'GatewayPlugin',
    metadata: { name: 'api-key', namespace: NS },
    spec: {
      plugin: 'key-auth',
      keyAuth: { consumers: [{ name: 'bench', secretKeyRef: { name: 'api-keys', key: 'bench' } }] },
    },
  },
  {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: 'sluice-admin', namespace: NS },
    spec: { clusterIP: 'None', ports: [{ name: 'admin', port: adminPort }] },
  },
  // kapi runs no EndpointSlice controller: the bench writes the headless Service's slice itself.
  {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: {
      name: 'sluice-admin-bench',
      namespace: NS,
      labels: { 'kubernetes.io/service-name': 'sluice-admin' },
    },
    addressType: 'IPv4',
    ports: [{ name: 'admin', port: adminPort }],
    endpoints: HOSTS.map((h, i) => ({
      addresses: [h],
      conditions: { ready: true },
      targetRef: { kind: 'Pod', name: `dataplane-${i + 1}` },
    })),
  },
];

/** Another API server's objects go after a run (kapi, like some test clusters, has no garbage collector). */
export function deleteBenchObjects(kubeconfig: string): void {
  for (const what of ['gatewayroutes,gatewayplugins,secrets,services,endpointslices,leases', NS])
    spawnSync('kubectl', what === NS ? ['delete', 'namespace', NS] : ['delete', what, '--all', '-n', NS], {
      env: { ...process.env, KUBECONFIG: kubeconfig },
      stdio: 'ignore',
    });
}
