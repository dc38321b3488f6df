/** The parts of a core/v1 Secret the controller reads (data is base64, stringData plain). */
import type { ObjectMeta } from './common.ts';

export interface Secret {
  apiVersion: 'v1';
  kind: 'Secret';
  metadata: ObjectMeta;
  data?: Record<string, string>;
  stringData?: Record<string, string>;
}
