/**
 * The parts of a core/v1 Service the controller reads: whether it exists, and its ports (the
 * targetPort too: a Gateway's Service keeps the data-plane ports allocated to its listeners).
 */
import type { ObjectMeta } from './common.ts';

export interface Service {
  apiVersion: 'v1';
  kind: 'Service';
  metadata: ObjectMeta;
  spec?: {
    ports?: { name?: string; port: number; targetPort?: number | string; appProtocol?: string }[];
  };
}
