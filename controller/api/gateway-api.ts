/**
 * The parts of the Gateway API (gateway.networking.k8s.io/v1, standard channel) the controller
 * reads. Their schemas are upstream's CRDs, which the API server enforces (defaults included:
 * parentRefs' group and kind, backendRefs' kind Service and weight 1, header match type Exact):
 * types only here, no second copy of the schema. Every field a CRD defaults is still optional,
 * because objects from an API server without the CRDs' defaulting (or a test's) may lack it.
 */
import type { ObjectMeta } from './common.ts';

export const GATEWAY_API_GROUP = 'gateway.networking.k8s.io';
/** GatewayClass spec.controllerName of the classes Sluice serves. */
export const GATEWAY_CONTROLLER_NAME = 'sluice.dev/gateway-controller';
/** The types a Gateway's Service may have (--gateway-service-type, a class's serviceType parameter). */
export const GATEWAY_SERVICE_TYPES = ['ClusterIP', 'LoadBalancer', 'NodePort'] as const;
export type GatewayServiceType = (typeof GATEWAY_SERVICE_TYPES)[number];
/** The label of the Service the controller makes for each Gateway. */
export const GATEWAY_NAME_LABEL = 'gateway.networking.k8s.io/gateway-name';

export interface GatewayClass {
  apiVersion: string;
  kind: 'GatewayClass';
  metadata: ObjectMeta;
  spec: {
    controllerName: string;
    parametersRef?: { group: string; kind: string; name: string; namespace?: string };
  };
}

export interface SecretObjectReference {
  group?: string;
  kind?: string;
  name: string;
  namespace?: string;
}

export interface GatewayListener {
  name: string;
  hostname?: string;
  port: number;
  protocol: string;
  tls?: { mode?: 'Terminate' | 'Passthrough'; certificateRefs?: SecretObjectReference[] };
  allowedRoutes?: {
    namespaces?: { from?: 'All' | 'Same' | 'Selector' | 'None'; selector?: LabelSelector };
    kinds?: { group?: string; kind: string }[];
  };
}

/** Gateway spec.tls.frontend's TLS settings (default, or one port's). */
export interface FrontendTls {
  validation?: {
    caCertificateRefs?: SecretObjectReference[];
    /** Default AllowValidOnly. */
    mode?: 'AllowValidOnly' | 'AllowInsecureFallback';
  };
}

export interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: { key: string; operator: string; values?: string[] }[];
}

export interface Gateway {
  apiVersion: string;
  kind: 'Gateway';
  metadata: ObjectMeta;
  spec: {
    gatewayClassName: string;
    listeners: GatewayListener[];
    /** Client certificates asked of HTTPS clients: a default, and per Gateway port. */
    tls?: {
      frontend?: {
        default?: FrontendTls;
        perPort?: { port: number; tls: FrontendTls }[];
      };
    };
    infrastructure?: {
      labels?: Record<string, string>;
      annotations?: Record<string, string>;
      parametersRef?: { group: string; kind: string; name: string };
    };
  };
}

export interface ParentReference {
  group?: string;
  kind?: string;
  namespace?: string;
  name: string;
  sectionName?: string;
  port?: number;
}

export interface HTTPHeaderMatch {
  type?: 'Exact' | 'RegularExpression';
  name: string;
  value: string;
}

export interface HTTPRouteMatch {
  path?: { type?: 'Exact' | 'PathPrefix' | 'RegularExpression'; value?: string };
  headers?: HTTPHeaderMatch[];
  queryParams?: { type?: 'Exact' | 'RegularExpression'; name: string; value: string }[];
  method?: string;
}

export interface HTTPRouteFilter {
  type: string;
  extensionRef?: { group: string; kind: string; name: string };
  [other: string]: unknown;
}

export interface HTTPBackendRef {
  group?: string;
  kind?: string;
  name: string;
  namespace?: string;
  port?: number;
  weight?: number;
  filters?: HTTPRouteFilter[];
}

export interface HTTPRouteRule {
  name?: string;
  matches?: HTTPRouteMatch[];
  timeouts?: { request?: string; backendRequest?: string };
  /** Experimental channel only. */
  retry?: { codes?: number[]; attempts?: number; backoff?: string };
  filters?: HTTPRouteFilter[];
  backendRefs?: HTTPBackendRef[];
}

export interface HTTPRoute {
  apiVersion: string;
  kind: 'HTTPRoute';
  metadata: ObjectMeta;
  spec: { parentRefs?: ParentReference[]; hostnames?: string[]; rules?: HTTPRouteRule[] };
}

export interface GRPCRouteMatch {
  method?: { type?: 'Exact' | 'RegularExpression'; service?: string; method?: string };
  headers?: HTTPHeaderMatch[];
}

export interface GRPCRouteRule {
  name?: string;
  matches?: GRPCRouteMatch[];
  filters?: HTTPRouteFilter[];
  backendRefs?: HTTPBackendRef[];
}

/** gRPC routing (GRPCRoute v1): methods are paths /<service>/<method> over HTTP/2. */
export interface GRPCRoute {
  apiVersion: string;
  kind: 'GRPCRoute';
  metadata: ObjectMeta;
  spec: { parentRefs?: ParentReference[]; hostnames?: string[]; rules?: GRPCRouteRule[] };
}

/** A core/v1 Namespace: its labels (listeners may admit routes by namespace label). */
export interface Namespace {
  apiVersion: 'v1';
  kind: 'Namespace';
  metadata: ObjectMeta;
}

export interface ReferenceGrant {
  apiVersion: string;
  kind: 'ReferenceGrant';
  metadata: ObjectMeta;
  spec: {
    from: { group: string; kind: string; namespace: string }[];
    to: { group: string; kind: string; name?: string }[];
  };
}
