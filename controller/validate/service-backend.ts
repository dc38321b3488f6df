/**
 * A Service backend as Gateway API backendRefs and Ingress backends name it (a Service of a
 * namespace, one of its ports) resolved to where its traffic goes: the Service's URL (cluster DNS
 * name and port: the upstream's name, Host header and id), the ready endpoints of its
 * EndpointSlices on that port (endpoints.ts), and whether the port speaks h2c (appProtocol
 * kubernetes.io/h2c). One definition for both kinds of route. Pure.
 *
 * With Services known (a cluster), a Service or port that does not exist is a problem; without
 * (standalone files) a port given by number is trusted, one given by name cannot be resolved.
 */
import { keyOf, type ResourceSet } from '../source/resource-set.ts';
import { type Endpoint, readyEndpoints } from './endpoints.ts';
import { serviceUrl } from './service-url.ts';

export interface ServiceBackend {
  /** HTTP/2 with prior knowledge (the Service port's appProtocol kubernetes.io/h2c). */
  protocol?: 'h2c';
  service: string;
  url: string;
  /** Undefined: no EndpointSlices known (the DNS name is dialled). */
  endpoints: readonly Endpoint[] | undefined;
}

/** The backend, or what is wrong with it (a sentence naming the Service and port). */
export function resolveServiceBackend(
  set: ResourceSet,
  namespace: string,
  name: string,
  port: { number?: number; name?: string },
  /** How the back end is spoken to (an Ingress's backend-protocol HTTPS): the URL's scheme. */
  scheme: 'http' | 'https' = 'http',
): ServiceBackend | string {
  const service = set.services?.get(keyOf(namespace, name));
  if (set.services !== null && service === undefined) return `Service ${namespace}/${name} not found`;
  const ports = service?.spec?.ports ?? [];
  const byName = port.number === undefined && port.name !== undefined;
  const servicePort = byName
    ? ports.find((p) => p.name === port.name)
    : ports.find((p) => p.port === port.number);
  if (set.services !== null && servicePort === undefined)
    return `Service ${namespace}/${name} has no port ${byName ? JSON.stringify(port.name) : port.number}`;
  const number = servicePort?.port ?? port.number;
  if (number === undefined)
    return `Service ${namespace}/${name}: port ${JSON.stringify(port.name)} cannot be resolved without the Service`;
  const slices = set.endpointSlices?.get(keyOf(namespace, name));
  return {
    ...(servicePort?.appProtocol === 'kubernetes.io/h2c' && { protocol: 'h2c' as const }),
    service: name,
    url: serviceUrl(namespace, name, number, scheme),
    endpoints: slices === undefined ? undefined : readyEndpoints(slices, servicePort?.name ?? ''),
  };
}
