/** Ingresses as the ingress-nginx annotation tests write them, and the Events the controller writes on them. */
import { ok } from './kubectl.ts';
import { waitFor } from './until.ts';

/** An Ingress of class sluice: one host, "/" (Prefix) to `service`:80, `annotations` under nginx.ingress.kubernetes.io/. */
export const nginxIngress = (
  name: string,
  host: string,
  annotations: Record<string, string>,
  service = 'web',
) => `
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: ${name}
  annotations: ${JSON.stringify(Object.fromEntries(Object.entries(annotations).map(([k, v]) => [`nginx.ingress.kubernetes.io/${k}`, v])))}
spec:
  ingressClassName: sluice
  rules:
    - host: ${host}
      http: { paths: [{ path: /, pathType: Prefix, backend: { service: { name: ${service}, port: { number: 80 } } } }] }
`;

export interface IngressEvent {
  type: string;
  reason: string;
  message: string;
  involvedObject: { name: string };
}

/** The Events of `reason` on object `name` of namespace `ns`, once there is one. */
export function eventsOf(ns: string, name: string, reason: string): Promise<IngressEvent[]> {
  return waitFor(
    `a ${reason} Event on ${name}`,
    async () =>
      (
        JSON.parse(await ok(['get', 'events', '-n', ns, '-o', 'json'])) as { items: IngressEvent[] }
      ).items.filter((e) => e.involvedObject.name === name && e.reason === reason),
    (items) => items.length > 0,
  );
}
