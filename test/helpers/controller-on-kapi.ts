/**
 * A controller on a real API server (KUBECONFIG) pushing to data planes of this process: the
 * headless admin Service and EndpointSlice through which it finds them, and the controller
 * started with the same wiring as `sluice controller` (startController), watching one namespace.
 */
import pino from 'pino';
import { type Controller, type ControllerOptions, startController } from '../../controller/main.ts';
import type { DataPlane, DataPlaneOptions } from '../../dataplane/main.ts';
import { ok } from './kubectl.ts';
import { freePort, startTestDataPlane } from './servers.ts';

/** The data planes' admin Service and its EndpointSlice (one endpoint per address), as YAML. */
export function dataplaneAdminObjects(
  adminPort: number,
  addresses: readonly string[] = ['127.0.0.1'],
): string {
  const endpoints = addresses.map(
    (a, i) =>
      `{ addresses: ["${a}"], conditions: { ready: true }, targetRef: { kind: Pod, name: dataplane-${i + 1} } }`,
  );
  return `
apiVersion: v1
kind: Service
metadata: { name: sluice-admin }
spec: { clusterIP: None, ports: [{ name: admin, port: ${adminPort} }] }
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: { name: sluice-admin-1, labels: { kubernetes.io/service-name: sluice-admin } }
addressType: IPv4
ports: [{ name: admin, port: ${adminPort} }]
endpoints: [${endpoints.join(', ')}]
`;
}

/**
 * Data planes of this process, one on each loopback address (pods' IPs: 127/8 all reaches lo),
 * with the same admin port, as pods have, and the admin Service and EndpointSlice in `ns` a
 * controller finds them by (dataplaneAdminObjects). Tests that run at the same time use
 * addresses of their own (the Gateway API suite 127.0.1.x, the Ingress tests 127.0.2.x).
 */
export async function startDataPlanesIn(
  ns: string,
  addresses: readonly string[],
  more: Partial<DataPlaneOptions> = {},
): Promise<DataPlane[]> {
  const adminPort = await freePort();
  const planes: DataPlane[] = [];
  for (const host of addresses)
    planes.push(await startTestDataPlane({ host, adminHost: host, adminPort, ...more }));
  await ok(['apply', '-n', ns, '-f', '-'], dataplaneAdminObjects(adminPort, addresses));
  return planes;
}

/** Sluice's CRDs applied and established, and a fresh namespace. */
export async function crdsAndNamespace(ns: string): Promise<void> {
  await ok(['apply', '--server-side', '--force-conflicts', '-f', 'crds']);
  await ok(['wait', '--for=condition=Established', '--timeout=30s', 'crd/gatewayroutes.sluice.dev']);
  await ok(['create', 'namespace', ns]);
}

/** A controller serving namespace `ns`, its Lease there, pushing with `token`, quick to build; `more` options. */
export function startControllerIn(
  ns: string,
  token: string,
  lease: string,
  more: Partial<ControllerOptions> = {},
): Promise<Controller> {
  return startController({
    log: pino({ level: 'silent' }),
    dataplaneService: `${ns}/sluice-admin`,
    adminPortName: 'admin',
    adminScheme: 'http',
    adminToken: token,
    metricsHost: '127.0.0.1',
    metricsPort: 0,
    leaseNamespace: ns,
    leaseName: lease,
    leaseSeconds: 3,
    holdoffMs: 10,
    watchNamespaces: [ns],
    ...more,
  });
}

/**
 * A Service and the EndpointSlice a cluster would give it: its pods (echo servers of the test
 * process, all on one port) ready. kapi runs no EndpointSlice controller, so a test writes both.
 */
export function serviceWithPods(
  name: string,
  pods: readonly { host: string; port: number }[],
  servicePort = 80,
): string {
  return `
apiVersion: v1
kind: Service
metadata: { name: ${name} }
spec: { ports: [{ name: http, port: ${servicePort}, targetPort: 3000 }] }
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: { name: ${name}-1, labels: { kubernetes.io/service-name: ${name} } }
addressType: IPv4
ports: [{ name: http, port: ${pods[0].port} }]
endpoints:
${pods.map((p) => `  - { addresses: ["${p.host}"], conditions: { ready: true } }`).join('\n')}
`;
}
