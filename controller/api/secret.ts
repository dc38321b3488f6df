/** The parts of a core/v1 Secret the controller reads (data is base64, stringData plain). */
import type { ObjectMeta } from './common.ts';

export interface Secret {
  apiVersion: 'v1';
  kind: 'Secret';
  metadata: ObjectMeta;
  /** kubernetes.io/tls for certificates (keys tls.crt, tls.key); Opaque when absent. */
  type?: string;
  data?: Record<string, string>;
  stringData?: Record<string, string>;
}

/** The parts of a core/v1 ConfigMap the controller reads (a Gateway's client CA bundle, key ca.crt). */
export interface ConfigMap {
  apiVersion: 'v1';
  kind: 'ConfigMap';
  metadata: ObjectMeta;
  data?: Record<string, string>;
}
