/**
 * ResolvedRefs for service.backendRef: in a cluster the Service must exist in the route's
 * namespace and expose the port. A route whose backend is missing is left out (its traffic
 * would only fail). In standalone mode Services are not known (the set holds none): nothing to check.
 */
import type { GatewayRoute } from '../api/gateway-route.ts';
import { keyOf, type ObjectRef, type ResourceSet } from '../source/resource-set.ts';
import type { Diagnostic } from './diagnostic.ts';

export function checkBackendRef(
  ref: ObjectRef,
  spec: GatewayRoute['spec'] | undefined,
  set: ResourceSet,
): Diagnostic[] {
  const backend = (spec as { service?: { backendRef?: { name?: unknown; port?: unknown } } } | undefined)
    ?.service?.backendRef;
  if (set.services === null || typeof backend?.name !== 'string') return [];
  const svc = set.services.get(keyOf(ref.namespace, backend.name));
  const notFound = (field: string, message: string): Diagnostic[] => [
    { object: ref, field, condition: 'ResolvedRefs', reason: 'BackendNotFound', message },
  ];
  if (svc === undefined)
    return notFound('spec.service.backendRef.name', `Service ${ref.namespace}/${backend.name} not found`);
  const ports = svc.spec?.ports ?? [];
  if (typeof backend.port === 'number' && !ports.some((p) => p.port === backend.port))
    return notFound(
      'spec.service.backendRef.port',
      `Service ${ref.namespace}/${backend.name} has no port ${backend.port} (it has ${ports.map((p) => p.port).join(', ') || 'none'})`,
    );
  return [];
}
