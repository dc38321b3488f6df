/**
 * The parts of a discovery.k8s.io/v1 EndpointSlice the controller reads: which Service it
 * belongs to (its label), its ports and its endpoints' addresses and readiness. Read both for
 * the data-plane pods (publish/discovery.ts) and for the back ends of backendRefs
 * (validate/endpoints.ts).
 */
import type { ObjectMeta } from './common.ts';

/** The label naming the Service a slice belongs to (set by Kubernetes' EndpointSlice controller). */
export const SERVICE_NAME_LABEL = 'kubernetes.io/service-name';

export interface EndpointSlice {
  apiVersion: 'discovery.k8s.io/v1';
  kind: 'EndpointSlice';
  metadata: ObjectMeta;
  addressType?: 'IPv4' | 'IPv6' | 'FQDN';
  /** A port's name is its Service port's name ('' or absent for an unnamed one). */
  ports?: { name?: string; port?: number; protocol?: string }[] | null;
  endpoints?:
    | {
        addresses: string[];
        /** Absent `ready` means ready (the API's rule). */
        conditions?: { ready?: boolean; serving?: boolean; terminating?: boolean };
        targetRef?: { name?: string };
      }[]
    | null;
}
