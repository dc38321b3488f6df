/**
 * ResolvedRefs for backendRefs (service.backendRef, and those of spec.versions and their canary
 * backends): in a cluster each Service must exist in the route's namespace and expose the port. A
 * route whose backend is missing is left out (its traffic would only fail). In standalone mode
 * Services are not known (the set holds none): nothing to check.
 */
import { backendRefsOf, type GatewayRoute } from '../api/gateway-route.ts';
import { keyOf, type ObjectRef, type ResourceSet } from '../source/resource-set.ts';
import type { Diagnostic } from './diagnostic.ts';

export function checkBackendRef(
  ref: ObjectRef,
  spec: GatewayRoute['spec'] | undefined,
  set: ResourceSet,
): Diagnostic[] {
  if (set.services === null) return [];
  const out: Diagnostic[] = [];
  const notFound = (field: string, message: string) =>
    out.push({ object: ref, field, condition: 'ResolvedRefs', reason: 'BackendNotFound', message });
  for (const backend of backendRefsOf(spec)) {
    const svc = set.services.get(keyOf(ref.namespace, backend.name));
    if (svc === undefined) {
      notFound(`${backend.field}.name`, `Service ${ref.namespace}/${backend.name} not found`);
      continue;
    }
    const ports = svc.spec?.ports ?? [];
    if (typeof backend.port === 'number' && !ports.some((p) => p.port === backend.port))
      notFound(
        `${backend.field}.port`,
        `Service ${ref.namespace}/${backend.name} has no port ${backend.port} (it has ${ports.map((p) => p.port).join(', ') || 'none'})`,
      );
  }
  return out;
}
