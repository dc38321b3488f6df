/**
 * Diagnostic: one problem found in one object, in the words its status will use. Every stage
 * after the source (validate, compile) reports through this type; build() turns the list into
 * the Accepted / ResolvedRefs conditions of each object.
 */
import type { ObjectRef } from '../source/resource-set.ts';

export type ConditionType = 'Accepted' | 'ResolvedRefs';

/**
 * Why a condition is False.
 * Accepted: Invalid (schema or semantics), Conflicted (another route has the same match).
 * ResolvedRefs: PluginNotFound (no such GatewayPlugin), PluginInvalid (it exists but is not accepted),
 * BackendNotFound (no such Service, or not that port), SecretNotFound (a secretKeyRef of a plugin,
 * or a spec.tls Secret), InvalidCertificateRef (a spec.tls Secret of the wrong type, without
 * tls.crt/tls.key, whose PEM does not parse, or whose certificate does not cover a host listed).
 */
export type Reason =
  | 'Invalid'
  | 'Conflicted'
  | 'PluginNotFound'
  | 'PluginInvalid'
  | 'BackendNotFound'
  | 'SecretNotFound'
  | 'InvalidCertificateRef';

export interface Diagnostic {
  object: ObjectRef;
  /** Where in the object, e.g. "spec.routes[1].paths[0]". */
  field: string;
  condition: ConditionType;
  reason: Reason;
  message: string;
}

export function invalid(object: ObjectRef, field: string, message: string): Diagnostic {
  return { object, field, condition: 'Accepted', reason: 'Invalid', message };
}

/** Fields as status messages write them: ["spec", "routes", "1", "paths"] → "spec.routes[1].paths". */
export { toField } from '../../dataplane/config/validate.ts';
