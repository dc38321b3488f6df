/**
 * How a user names a backend: a url or a Kubernetes Service (backendRef). Shared by the
 * GatewayRoute's service (controller/api) and the handler kinds that call services of their own
 * (an aggregate's calls): one shape, resolved one way (controller/validate/service-url.ts).
 */
import { type Static, Type } from '@sinclair/typebox';

export const BackendRef = Type.Object(
  {
    name: Type.String({
      minLength: 1,
      maxLength: 63,
      pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$',
      description: 'Name of the Kubernetes Service, in the namespace of this GatewayRoute.',
    }),
    port: Type.Integer({ minimum: 1, maximum: 65535, description: 'Port of the Service.' }),
    scheme: Type.Optional(
      Type.Union([Type.Literal('http'), Type.Literal('https')], { description: 'http (default) or https.' }),
    ),
  },
  { additionalProperties: false, description: 'A Kubernetes Service to send traffic to, instead of a URL.' },
);
export type BackendRef = Static<typeof BackendRef>;

/** A backend's url field: absolute http(s) (checked again by the controller, which a file never bypasses). */
export const BackendUrl = (description: string) => Type.String({ maxLength: 2048, description });

/** The CEL rule of an object holding url or backendRef. */
export const ONE_BACKEND_RULE = {
  rule: 'has(self.url) != has(self.backendRef)',
  message: 'exactly one of url or backendRef must be set',
};

/** A backend a handler's config names, where it was written (relative to the config): read defensively. */
export interface BackendSite {
  field: string;
  url?: unknown;
  backendRef?: unknown;
}
