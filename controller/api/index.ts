import type { EndpointSlice } from './endpoint-slice.ts';
import type { GatewayPlugin } from './gateway-plugin.ts';
import type { GatewayRoute } from './gateway-route.ts';
import type { Ingress, IngressClass } from './ingress.ts';
import type { ConfigMap, Secret } from './secret.ts';
import type { Service } from './service.ts';
import type {
  Gateway,
  GatewayClass,
  GRPCRoute,
  HTTPRoute,
  Namespace,
  ReferenceGrant,
} from './gateway-api.ts';

export type { EndpointSlice } from './endpoint-slice.ts';
export type { GatewayPlugin } from './gateway-plugin.ts';
export type { GatewayRoute } from './gateway-route.ts';
export type { Ingress, IngressClass } from './ingress.ts';
export type { ConfigMap, Secret } from './secret.ts';
export type { Service } from './service.ts';
export type {
  Gateway,
  GatewayClass,
  GRPCRoute,
  HTTPRoute,
  Namespace,
  ReferenceGrant,
} from './gateway-api.ts';
export { API_VERSION, GROUP, VERSION } from './common.ts';

/** Any object the controller reads. */
export type Resource =
  | GatewayRoute
  | GatewayPlugin
  | Secret
  | ConfigMap
  | Service
  | EndpointSlice
  | GatewayClass
  | Gateway
  | HTTPRoute
  | GRPCRoute
  | ReferenceGrant
  | Namespace
  | Ingress
  | IngressClass;
