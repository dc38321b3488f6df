/**
 * The parts of networking.k8s.io/v1 Ingress and IngressClass the controller reads. The API
 * server validates them (paths start with "/" for Exact and Prefix, a backend is a service or a
 * resource, hosts are DNS names or "*." and one): types only here. Every field is optional that
 * an object from a test or a file may lack.
 */
import type { ObjectMeta } from './common.ts';

export const INGRESS_API_VERSION = 'networking.k8s.io/v1';
/** IngressClass spec.controller of the classes Sluice serves. */
export const INGRESS_CONTROLLER = 'sluice.dev/ingress-controller';
/** On an IngressClass: Ingresses without a class are of this one. */
export const DEFAULT_CLASS_ANNOTATION = 'ingressclass.kubernetes.io/is-default-class';
/** The class as Ingresses named it before spec.ingressClassName (deprecated, still common). */
export const LEGACY_CLASS_ANNOTATION = 'kubernetes.io/ingress.class';

export interface IngressServiceBackend {
  name: string;
  /** Exactly one of name and number. */
  port?: { name?: string; number?: number };
}

export interface IngressBackend {
  service?: IngressServiceBackend;
  /** A backend of another kind (an object of some API group): not served. */
  resource?: { apiGroup?: string; kind: string; name: string };
}

export type PathType = 'Exact' | 'Prefix' | 'ImplementationSpecific';

export interface HTTPIngressPath {
  path?: string;
  pathType?: PathType;
  backend: IngressBackend;
}

export interface IngressRule {
  host?: string;
  http?: { paths: HTTPIngressPath[] };
}

export interface IngressTLS {
  hosts?: string[];
  secretName?: string;
}

export interface LoadBalancerIngress {
  ip?: string;
  hostname?: string;
}

export interface Ingress {
  apiVersion: string;
  kind: 'Ingress';
  metadata: ObjectMeta;
  spec?: {
    ingressClassName?: string;
    defaultBackend?: IngressBackend;
    tls?: IngressTLS[];
    rules?: IngressRule[];
  };
  status?: { loadBalancer?: { ingress?: LoadBalancerIngress[] } };
}

export interface IngressClass {
  apiVersion: string;
  kind: 'IngressClass';
  metadata: ObjectMeta;
  spec?: { controller?: string; parameters?: { apiGroup?: string; kind: string; name: string } };
}
