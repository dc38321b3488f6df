/**
 * Shapes shared by the Sluice custom resources (group sluice.dev, version v1alpha1).
 * Each schema is TypeBox, so one definition gives the TypeScript type, the controller's
 * validation and the CRD's OpenAPI schema (scripts/gen-crds.ts). Every field carries a
 * description: that is what `kubectl explain` prints.
 */
import { type Static, Type } from '@sinclair/typebox';

export const GROUP = 'sluice.dev';
export const VERSION = 'v1alpha1';
export const API_VERSION = `${GROUP}/${VERSION}`;

/** Kubernetes-style duration: "250ms", "5s", "1m30s". */
export const Duration = Type.String({
  pattern: '^([0-9]{1,5}(h|m|s|ms)){1,4}$',
  description: 'A duration such as "250ms", "5s" or "1m30s" (units h, m, s, ms).',
});

/** A DNS-1123 label: the form Kubernetes names take. */
export const Name = Type.String({
  minLength: 1,
  maxLength: 63,
  pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$',
  description: 'A DNS-1123 label: lower-case letters, digits and "-", at most 63 characters.',
});

export const PluginRef = Type.Object(
  { name: { ...Name, description: 'Name of a GatewayPlugin in the namespace of this GatewayRoute.' } },
  { additionalProperties: false, description: 'A reference to a GatewayPlugin object.' },
);
export type PluginRef = Static<typeof PluginRef>;

export const Condition = Type.Object(
  {
    type: Type.String({ maxLength: 316, description: 'Accepted, ResolvedRefs or Programmed.' }),
    status: Type.Union([Type.Literal('True'), Type.Literal('False'), Type.Literal('Unknown')], {
      description: 'True, False or Unknown.',
    }),
    observedGeneration: Type.Optional(
      Type.Integer({ minimum: 0, description: 'The generation this condition was computed from.' }),
    ),
    lastTransitionTime: Type.String({ format: 'date-time', description: 'When the status last changed.' }),
    reason: Type.String({ maxLength: 1024, description: 'A CamelCase reason for the status.' }),
    message: Type.String({
      maxLength: 32768,
      description: 'A short human-readable message naming the field concerned.',
    }),
  },
  { description: 'One observation of the state of this object, in the shape of metav1.Condition.' },
);
export type Condition = Static<typeof Condition>;

export const Status = Type.Object(
  {
    observedGeneration: Type.Optional(
      Type.Integer({ minimum: 0, description: 'The metadata.generation the controller last processed.' }),
    ),
    conditions: Type.Optional(
      Type.Array(Condition, {
        maxItems: 8,
        description: 'Accepted, ResolvedRefs and Programmed.',
        'x-kubernetes-list-type': 'map',
        'x-kubernetes-list-map-keys': ['type'],
      }),
    ),
  },
  { description: 'What the controller observed of this object.' },
);
export type Status = Static<typeof Status>;

/** The parts of ObjectMeta the controller reads. */
export interface ObjectMeta {
  name: string;
  namespace?: string;
  generation?: number;
  creationTimestamp?: string;
  resourceVersion?: string;
  uid?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}
