/**
 * ReferenceGrant (Gateway API): a reference from one namespace into another is allowed only when
 * a ReferenceGrant in the target's namespace lists the referring kind and namespace in `from`
 * and the target's kind (and name, when it gives one) in `to`. Same-namespace references need
 * none. Pure.
 */
import type { ReferenceGrant } from '../api/gateway-api.ts';

export interface Referrer {
  group: string;
  kind: string;
  namespace: string;
}

export interface Target {
  group: string;
  kind: string;
  namespace: string;
  name: string;
}

export function referencePermitted(
  grants: ReadonlyMap<string, ReferenceGrant>,
  from: Referrer,
  to: Target,
): boolean {
  if (from.namespace === to.namespace) return true;
  for (const grant of grants.values()) {
    if (grant.metadata.namespace !== to.namespace) continue;
    const fromOk = grant.spec.from.some(
      (f) => f.group === from.group && f.kind === from.kind && f.namespace === from.namespace,
    );
    const toOk = grant.spec.to.some(
      (t) => t.group === to.group && t.kind === to.kind && (t.name === undefined || t.name === to.name),
    );
    if (fromOk && toOk) return true;
  }
  return false;
}
