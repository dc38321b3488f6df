/**
 * The status the Gateway API translation computes (no lastTransitionTime: the status writer adds
 * it when a condition changes; no Programmed: that depends on which pods run the snapshot, which
 * the runner knows, not build).
 */
import type { ComputedCondition } from '../build.ts';
import type { ParentReference } from '../api/gateway-api.ts';

export type { ComputedCondition };

export function condition(
  type: string,
  ok: boolean,
  reason: string,
  message: string,
  observedGeneration: number,
): ComputedCondition {
  return { type, status: ok ? 'True' : 'False', reason, message, observedGeneration };
}

export interface GatewayClassStatus {
  observedGeneration: number;
  conditions: ComputedCondition[];
  /** What the class's Gateways support, sorted by name (features.ts); none for a class not accepted. */
  supportedFeatures: { name: string }[];
}

export interface ListenerStatus {
  name: string;
  supportedKinds: { group: string; kind: string }[];
  attachedRoutes: number;
  conditions: ComputedCondition[];
}

export interface GatewayStatus {
  observedGeneration: number;
  conditions: ComputedCondition[];
  listeners: ListenerStatus[];
}

export interface RouteParentStatus {
  parentRef: ParentReference;
  controllerName: string;
  conditions: ComputedCondition[];
}

export interface RouteStatus {
  observedGeneration: number;
  /** Only the parents that are Gateways of Sluice's classes: other controllers write theirs. */
  parents: RouteParentStatus[];
}
