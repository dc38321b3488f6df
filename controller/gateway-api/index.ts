/**
 * Gateway API → the model, in two steps: Gateways first (their listeners and ports), because
 * routes attach to listeners. Pure, like the rest of build. What it adds to a build: routes (in
 * the same ModelRoute shape GatewayRoutes take), the table's listeners and their certificates,
 * the status of every GatewayClass, Gateway and HTTPRoute Sluice serves, and the Service each
 * Gateway should have (the source writes it).
 */
import type { Certificate, Listener } from '../../dataplane/config/route-table.ts';
import { GATEWAY_NAME_LABEL, type Gateway, type GatewayServiceType } from '../api/gateway-api.ts';
import type { ResourceSet } from '../source/resource-set.ts';
import type { ModelPlugin, ModelRoute } from '../validate/model.ts';
import type { GatewayClassStatus, GatewayStatus, RouteStatus } from './conditions.ts';
import type { ExternalTrafficPolicy } from './class-parameters.ts';
import { gatewayServiceName, translateGateways } from './gateways.ts';
import { translateHttpRoutes } from './http-routes.ts';
import type { PortRange } from './ports.ts';

export interface GatewayService {
  namespace: string;
  name: string;
  /** The Gateway it belongs to (its ownerReference and label). */
  gateway: { name: string; uid: string | undefined };
  /** Listener port → data-plane port, by listener port. */
  ports: { port: number; targetPort: number }[];
  labels: Record<string, string>;
  annotations: Record<string, string>;
  /** Its type, when its class's parameters set one (else the controller's default). */
  type?: GatewayServiceType;
  /** Its class's externalTrafficPolicy parameter (NodePort and LoadBalancer only; else Cluster). */
  externalTrafficPolicy?: ExternalTrafficPolicy;
}

export interface GatewayApiResult {
  routes: ModelRoute[];
  /** Plugin instances its routes' filters make, by "namespace/name", for the model's plugins. */
  plugins: ReadonlyMap<string, ModelPlugin>;
  /** Sorted by id. */
  listeners: Listener[];
  certificates: Certificate[];
  status: {
    classes: Map<string, GatewayClassStatus>;
    gateways: Map<string, GatewayStatus>;
    routes: Map<string, RouteStatus>;
    grpcRoutes: Map<string, RouteStatus>;
  };
  services: GatewayService[];
}

export interface GatewayApiOptions {
  /** Data-plane ports for listeners (default 20000–20999). */
  ports?: PortRange;
  /** The GatewayClass spec.controllerName this installation serves (default sluice.dev/gateway-controller). */
  controllerName?: string;
}

export function translateGatewayApi(
  set: ResourceSet,
  plugins: ReadonlyMap<string, ModelPlugin>,
  o: GatewayApiOptions = {},
): GatewayApiResult {
  const gateways = translateGateways(set, o);
  const routes = translateHttpRoutes(set, gateways, plugins);
  const listeners: Listener[] = [];
  const services: GatewayService[] = [];
  for (const [key, { gateway, listeners: ls, parameters }] of gateways.gateways) {
    for (const l of ls) if (l.served && l.entry) listeners.push(l.entry);
    if (parameters === null) {
      services.push(heldService(gateway));
      continue;
    }
    const ports = [...(gateways.ports.get(key) ?? [])]
      .map(([port, targetPort]) => ({ port, targetPort }))
      .sort((a, b) => a.port - b.port);
    services.push({
      namespace: gateway.metadata.namespace!,
      name: gatewayServiceName(gateway.metadata.name),
      gateway: { name: gateway.metadata.name, uid: gateway.metadata.uid },
      ports,
      // The class's, then the Gateway's own (more specific), then the label that finds it.
      labels: {
        ...parameters.serviceLabels,
        ...gateway.spec.infrastructure?.labels,
        [GATEWAY_NAME_LABEL]: gateway.metadata.name,
      },
      annotations: { ...parameters.serviceAnnotations, ...gateway.spec.infrastructure?.annotations },
      ...(parameters.serviceType && { type: parameters.serviceType }),
      ...(parameters.externalTrafficPolicy && { externalTrafficPolicy: parameters.externalTrafficPolicy }),
    });
  }
  // No ports: the writer leaves such a Service as it is (neither updated nor deleted).
  for (const g of gateways.held) services.push(heldService(g));
  return {
    routes: routes.routes,
    plugins: routes.plugins,
    listeners: listeners.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)),
    certificates: gateways.certificates,
    status: {
      classes: gateways.classes,
      gateways: new Map([...gateways.gateways].map(([k, g]) => [k, g.status])),
      routes: routes.status,
      grpcRoutes: routes.grpcStatus,
    },
    services,
  };
}

/** A Gateway whose parameters do not resolve: no ports, so its Service is left as it is. */
function heldService(g: Gateway): GatewayService {
  return {
    namespace: g.metadata.namespace!,
    name: gatewayServiceName(g.metadata.name),
    gateway: { name: g.metadata.name, uid: g.metadata.uid },
    ports: [],
    labels: {},
    annotations: {},
  };
}
