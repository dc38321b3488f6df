/**
 * The parts of a core/v1 Service the controller reads: whether it exists, and its ports (the
 * targetPort too: a Gateway's Service keeps the data-plane ports allocated to its listeners);
 * for the Services it makes for Gateways, also what it writes (type, selector, owner) and where
 * the Gateway's address comes from (load-balancer ingress, cluster IP).
 */
import type { ObjectMeta } from './common.ts';

export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

export interface ServicePort {
  name?: string;
  port: number;
  targetPort?: number | string;
  protocol?: string;
  nodePort?: number;
  /** kubernetes.io/h2c: the port speaks HTTP/2 with prior knowledge (Gateway API backends). */
  appProtocol?: string;
}

export interface Service {
  apiVersion: 'v1';
  kind: 'Service';
  metadata: ObjectMeta & { ownerReferences?: OwnerReference[] };
  spec?: {
    type?: string;
    clusterIP?: string;
    selector?: Record<string, string>;
    ports?: ServicePort[];
    externalTrafficPolicy?: string;
    healthCheckNodePort?: number;
  };
  status?: { loadBalancer?: { ingress?: { ip?: string; hostname?: string }[] } };
}
