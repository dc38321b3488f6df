/** The parts of a core/v1 Service the controller reads: whether it exists, and its ports. */
import type { ObjectMeta } from './common.ts';

export interface Service {
  apiVersion: 'v1';
  kind: 'Service';
  metadata: ObjectMeta;
  spec?: { ports?: { name?: string; port: number }[] };
}
