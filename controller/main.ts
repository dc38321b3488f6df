/**
 * Wiring of `sluice controller`: kubeconfig, metrics and health endpoints, the runner, leader
 * election. Every replica watches and builds; the Lease holder pushes and writes status.
 */
import type { PortRange } from './gateway-api/ports.ts';
import type { GatewayServiceType } from './api/gateway-api.ts';
import { createServer, type Server } from 'node:http';
import { hostname } from 'node:os';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import type { AdminTokens } from '../dataplane/config/admin-auth.ts';
import { serveDebugConfig } from './debug.ts';
import { LeaderElector } from './leader.ts';
import { ControllerMetrics } from './metrics.ts';
import { Runner } from './runner.ts';
import type { InformerOptions } from './source/informers.ts';
import { Kube, loadKubeConfig } from './source/kube.ts';

export interface ControllerOptions {
  log: Logger;
  /** "namespace/name" of the data plane's headless admin Service. */
  dataplaneService: string;
  adminPortName: string;
  adminScheme: 'http' | 'https';
  /** The data planes' admin token, or the tokens valid now, newest first (a token file during a rotation). */
  adminToken: AdminTokens;
  /**
   * With adminScheme https: the CA of the pods' admin certificates (or the CAs trusted now, newest
   * first: a CA file during a rotation), and the name they were issued for.
   */
  adminCa?: string | (() => readonly string[]);
  adminTlsServerName?: string;
  metricsHost: string;
  metricsPort: number;
  leaseNamespace: string;
  leaseName: string;
  identity?: string;
  leaseSeconds?: number;
  holdoffMs?: number;
  /** This installation's class (label sluice.dev/class of its routes and plugins); absent: unlabelled ones. */
  className?: string;
  /** How often the leader asks each pod which snapshot it runs. */
  resyncMs?: number;
  /** Where routes, plugins, Secrets and Services are watched; absent or empty: every namespace. */
  watchNamespaces?: string[];
  /**
   * Gateway API: serve the Gateways of the classes of `gatewayControllerName` (default
   * sluice.dev/gateway-controller) whenever the CRDs are
   * installed (default true), listener ports allocated from `gatewayPorts` (default 20000–20999).
   */
  gatewayApi?: boolean;
  gatewayPorts?: PortRange;
  /** The GatewayClass spec.controllerName served (default sluice.dev/gateway-controller). */
  gatewayControllerName?: string;
  /**
   * Ingress: serve networking.k8s.io/v1 Ingresses of class `ingressClass` (default sluice) and of
   * IngressClasses of sluice.dev/ingress-controller (default true); their status.loadBalancer is
   * the address of `publishService` ("namespace/name"; absent: not written).
   */
  ingress?: boolean;
  ingressClass?: string;
  publishService?: string;
  /** Each Gateway's Service: its selector (the data-plane pods' labels) and type (default ClusterIP). */
  gatewayServiceSelector?: Record<string, string>;
  gatewayServiceType?: GatewayServiceType;
  informer?: InformerOptions;
}

export interface Controller {
  metricsUrl: string;
  runner: Runner;
  elector: LeaderElector;
  close(): Promise<void>;
}

export async function startController(o: ControllerOptions): Promise<Controller> {
  const [namespace, service] = o.dataplaneService.split('/');
  if (!namespace || !service) throw new Error('--dataplane-service must be NAMESPACE/NAME');
  const kube = new Kube(loadKubeConfig());
  const metrics = new ControllerMetrics();
  const runner = new Runner({
    kube,
    log: o.log,
    metrics,
    eventsNamespace: o.leaseNamespace,
    dataplane: {
      namespace,
      service,
      portName: o.adminPortName,
      scheme: o.adminScheme,
      tls: o.adminCa ? { ca: o.adminCa, serverName: o.adminTlsServerName } : undefined,
    },
    adminToken: o.adminToken,
    holdoffMs: o.holdoffMs,
    resyncMs: o.resyncMs,
    className: o.className || null,
    watchNamespaces: o.watchNamespaces?.length ? o.watchNamespaces : null,
    gatewayApi: o.gatewayApi ?? true,
    gatewayPorts: o.gatewayPorts,
    gatewayControllerName: o.gatewayControllerName,
    ingress: o.ingress ?? true,
    ingressClass: o.ingressClass,
    publishService: o.publishService ?? null,
    gatewayServiceSelector: o.gatewayServiceSelector,
    gatewayServiceType: o.gatewayServiceType,
    informer: o.informer,
  });
  let ready = false;
  const server: Server = createServer((req, res) => {
    if (req.url === '/metrics') {
      metrics.registry.metrics().then((text) => {
        res.writeHead(200, { 'content-type': metrics.registry.contentType });
        res.end(text);
      });
    } else if (req.url === '/healthz') res.end('ok');
    else if (req.url === '/debug/config') serveDebugConfig(req, res, o.adminToken, runner.snapshot());
    else if (req.url === '/readyz') {
      res.writeHead(ready ? 200 : 503);
      res.end(ready ? 'ready' : 'not synced yet');
    } else {
      res.writeHead(404);
      res.end();
    }
  });
  await new Promise<void>((r) => server.listen(o.metricsPort, o.metricsHost, r));
  const a = server.address() as AddressInfo;
  const identity = o.identity ?? `${hostname()}-${process.pid}`;
  const elector = new LeaderElector(kube, {
    namespace: o.leaseNamespace,
    name: o.leaseName,
    identity,
    leaseSeconds: o.leaseSeconds,
    onChange: (leading) => {
      o.log.info({ identity, leading }, leading ? 'leading: pushing and writing status' : 'standing by');
      runner.setLeading(leading);
    },
    onError: (err) => o.log.warn({ err: (err as Error).message }, 'leader election'),
  });
  // Watch and build first (a warm standby); only then compete for the Lease.
  await runner.start();
  ready = true;
  elector.start();
  o.log.info({ identity, metrics: `http://${a.address}:${a.port}` }, 'sluice controller started');
  return {
    metricsUrl: `http://${a.address}:${a.port}`,
    runner,
    elector,
    async close() {
      await elector.stop();
      runner.stop();
      await new Promise((r) => server.close(r));
    },
  };
}
