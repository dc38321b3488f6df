/**
 * The Model: what validate/ hands to compile/. Only accepted objects whose references all
 * resolve are in it, so the compiler never has to ask whether something is valid.
 */
import type { GatewayRouteSpec } from '../api/gateway-route.ts';
import type { PluginName } from '../../dataplane/config/catalog.ts';
import type { Balance, Certificate, Listener, Route, SourceRef } from '../../dataplane/config/route-table.ts';
import type { ObjectRef } from '../source/resource-set.ts';
import type { Endpoint } from './endpoints.ts';
import type { ModelHandler } from './handlers.ts';
import type { ModelCertificate } from './tls-refs.ts';
import type { ModelVersions } from './versions.ts';

export interface ModelPlugin {
  ref: ObjectRef;
  source: SourceRef;
  plugin: PluginName;
  /** Where the config is written: "spec.<the plugin's field>", or the deprecated "spec.config". */
  field: string;
  /** Checked against its manifest's schema; {} when the object has none. */
  config: Record<string, unknown>;
}

/** A weighted backend's own request header edits: the proxy entry's backends[].requestHeaders. */
export type HeaderEdits = NonNullable<
  NonNullable<Extract<Route['handler'], { type: 'proxy' }>['backends']>[number]['requestHeaders']
>;

export interface ModelRoute {
  ref: ObjectRef;
  source: SourceRef;
  /** creationTimestamp in ms; undefined sorts last (precedence rule 6). */
  createdMs: number | undefined;
  /** Schema-valid and semantically checked (unique route names, one of url/backendRef). */
  spec: GatewayRouteSpec;
  /** service.url normalized, or backendRef resolved: origin plus base path, no trailing "/". */
  upstreamUrl: string;
  /** spec.service.balance checked (only with a backendRef); absent: round robin. */
  balance?: Balance;
  /** Per spec.routes[i]: the handler kind it chooses, checked and its backends resolved; null = proxy. */
  handlers: readonly (ModelHandler | null)[];
  /** spec.versions checked, backends resolved; absent when the route has none. */
  versions?: ModelVersions;
  /** spec.tls resolved: every Secret found, parsed, covering its hosts. */
  certificates: ModelCertificate[];
  /**
   * In a cluster, by backend URL: the ready endpoints of each backendRef'd Service that has
   * EndpointSlices (validate/endpoints.ts); absent or without the URL: connect to the URL.
   */
  endpoints?: ReadonlyMap<string, readonly Endpoint[]>;
  /**
   * The Gateway listeners (table listener ids) it is served on; absent: the proxy's own ports.
   * Set for routes from HTTPRoutes (controller/gateway-api/), whose `ref.kind` says so.
   */
  listeners?: readonly string[];
  /**
   * Routes from HTTPRoutes and GRPCRoutes (one per rule of each): the rule's index in its route,
   * for Gateway API's precedence, which takes rules in list order (compile/precedence.ts).
   */
  ruleIndex?: number;
  /** Its paths are regular expressions (dataplane/config/path-regex.ts): an Ingress's under use-regex. */
  regex?: true;
  /**
   * Where its one match was written, when its object is not a GatewayRoute's shape (an Ingress
   * path: "spec.rules[0].http.paths[1]"), for the diagnostics of compile (a conflict).
   */
  field?: string;
  /** By backend URL: those spoken to in HTTP/2 with prior knowledge (GRPCRoute, appProtocol kubernetes.io/h2c). */
  protocols?: ReadonlyMap<string, 'h2c'>;
  /** An HTTPRoute rule's RequestMirror filters that resolve: copies to these Services (the proxy's mirrors). */
  mirrors?: readonly {
    service: string;
    url: string;
    fraction?: { numerator: number; denominator: number };
  }[];
  /**
   * An Ingress's custom-http-errors with its default-backend: the Service that answers in place of
   * those statuses of the upstream (and when it has no endpoint), as the proxy's errorPages; its
   * url's endpoints are in `endpoints` with the others.
   */
  errorPages?: {
    service: string;
    url: string;
    statuses: readonly number[];
    headers: Readonly<Record<string, string>>;
  };
  /** Cookies its entries match (an Ingress's canary-by-cookie routes): the table's match.cookies. */
  cookies?: readonly { name: string; value: string }[];
  /** An HTTPRoute rule's URLRewrite: the table's `rewrite` of each of its entries. */
  rewrite?: Route['rewrite'];
  /**
   * An HTTPRoute rule's weighted backends, when more than one: the proxy's `backends`. An
   * `invalid` one (a backendRef that does not resolve) has its share answered 500.
   */
  backends?: readonly (
    | { service: string; url: string; weight: number; requestHeaders?: HeaderEdits }
    | { invalid: true; weight: number }
  )[];
}

export interface Model {
  /** In namespace/name order. */
  routes: readonly ModelRoute[];
  /** Accepted GatewayPlugins by "namespace/name". */
  plugins: ReadonlyMap<string, ModelPlugin>;
  /** Gateway listeners to serve and the certificates they present (controller/gateway-api/), sorted by id. */
  gateway?: { listeners: readonly Listener[]; certificates: readonly Certificate[] };
}
