/**
 * GatewayRoute: one backend service and the routes that reach it (the spec's §2.3 shape:
 * service.name, service.url, service.routes[].name, service.routes[].paths[]), with
 * GatewayPlugin references at service scope (spec.plugins) and route scope (routes[].plugins).
 */
import { type Static, Type } from '@sinclair/typebox';
import { TOKEN_PATTERN } from '../../dataplane/config/http-grammar.ts';
import { ROUTE_PATH_PATTERN } from '../../dataplane/config/path-grammar.ts';
import { Duration, Name, type ObjectMeta, PluginRef, type Status } from './common.ts';

const HTTP_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'TRACE'] as const;
/** A lower-case host name, or "*." and a name for any one label in front of it. */
const HOST_PATTERN = '^(\\*\\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$';

export const BackendRef = Type.Object(
  {
    name: { ...Name, description: 'Name of the Kubernetes Service, in the namespace of this GatewayRoute.' },
    port: Type.Integer({ minimum: 1, maximum: 65535, description: 'Port of the Service.' }),
    scheme: Type.Optional(
      Type.Union([Type.Literal('http'), Type.Literal('https')], { description: 'http (default) or https.' }),
    ),
  },
  { additionalProperties: false, description: 'A Kubernetes Service to send traffic to, instead of a URL.' },
);

export const Timeouts = Type.Object(
  {
    connect: Type.Optional({
      ...Duration,
      description: 'Time allowed to open a connection to the upstream (default 5s).',
    }),
    response: Type.Optional({
      ...Duration,
      description:
        "Time allowed from sending the request until the upstream's response headers arrive (default 60s).",
    }),
    idle: Type.Optional({
      ...Duration,
      description: "Longest pause allowed between two chunks of the upstream's response body (default 60s).",
    }),
    request: Type.Optional({
      ...Duration,
      description: 'Overall deadline until response headers, retries included (default: none). Past it: 504.',
    }),
  },
  { additionalProperties: false, description: 'Upstream timeouts. A timeout answers 504.' },
);

export const Retries = Type.Object(
  {
    attempts: Type.Integer({ minimum: 1, maximum: 10, description: 'Retries after the first try.' }),
    statuses: Type.Optional(
      Type.Array(Type.Integer({ minimum: 500, maximum: 599, description: 'A 5xx status.' }), {
        maxItems: 16,
        description:
          'Upstream statuses retried (default 502, 503, 504). Connection failures are always retried.',
      }),
    ),
    perTry: Type.Optional({
      ...Duration,
      description: 'Time allowed for response headers per try (default: timeouts.response).',
    }),
    backoff: Type.Optional(
      Type.Object(
        {
          base: Type.Optional({
            ...Duration,
            description: 'First wait (default 25ms); doubles each try, with jitter.',
          }),
          max: Type.Optional({ ...Duration, description: 'Longest wait (default 250ms).' }),
        },
        { additionalProperties: false, description: 'Wait between tries: exponential with full jitter.' },
      ),
    ),
    budgetPercent: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 100,
        description: 'Retries allowed as a share of requests over 10 s (default 20; at least 3 per 10 s).',
      }),
    ),
    idempotentBackend: Type.Optional(
      Type.Boolean({
        description:
          'The backend makes POST/PATCH safe to repeat itself: retry them like idempotent methods. Otherwise POST/PATCH ' +
          'are retried only under an idempotency key, and only when the request never reached the upstream.',
      }),
    ),
  },
  {
    additionalProperties: false,
    description:
      'Retries of idempotent methods (GET, HEAD, OPTIONS, PUT, DELETE) on connection failures and the statuses listed; ' +
      'never after the response has started reaching the client.',
  },
);

export const CircuitBreaker = Type.Object(
  {
    errorPercent: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 100,
        description: 'Share of failures (5xx, errors) that opens it (default 50).',
      }),
    ),
    minRequests: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 100_000,
        description: 'Requests in the window before it may open (default 20).',
      }),
    ),
    window: Type.Optional({
      ...Duration,
      description: 'Window over which failures are counted (default 10s).',
    }),
    openFor: Type.Optional({ ...Duration, description: 'Time it stays open before probing (default 5s).' }),
    halfOpenRequests: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 100,
        description: 'Probes let through, all of which must succeed to close it (default 3).',
      }),
    ),
  },
  {
    additionalProperties: false,
    description: 'Per upstream: while open, requests get 503 without reaching it.',
  },
);

export const Service = Type.Object(
  {
    name: { ...Name, description: 'Name of the backend service (used in ids, metrics and logs).' },
    url: Type.Optional(
      Type.String({
        maxLength: 2048,
        description:
          'Address of the backend, e.g. http://charges.payments:8080/v1. Its path is prepended to the forwarded path.',
      }),
    ),
    backendRef: Type.Optional(BackendRef),
    timeouts: Type.Optional(Timeouts),
    retries: Type.Optional(Retries),
    circuitBreaker: Type.Optional(CircuitBreaker),
  },
  {
    additionalProperties: false,
    description: 'The backend service: exactly one of url or backendRef.',
    'x-kubernetes-validations': [
      {
        rule: 'has(self.url) != has(self.backendRef)',
        message: 'exactly one of url or backendRef must be set',
      },
      {
        rule: "!has(self.url) || (isURL(self.url) && (self.url.startsWith('http://') || self.url.startsWith('https://')))",
        message: 'url must be an absolute http:// or https:// URL',
        fieldPath: '.url',
      },
    ],
  },
);

export const HeaderMatch = Type.Object(
  {
    name: Type.String({
      minLength: 1,
      maxLength: 256,
      pattern: TOKEN_PATTERN,
      description: 'Header name (case-insensitive).',
    }),
    value: Type.String({
      maxLength: 4096,
      description: 'Value the header must have (exact, case-sensitive).',
    }),
  },
  {
    additionalProperties: false,
    description: 'A request header that must be present with this exact value.',
  },
);

export const RouteRule = Type.Object(
  {
    name: { ...Name, description: 'Route name, unique within this GatewayRoute.' },
    paths: Type.Array(
      Type.String({
        minLength: 1,
        maxLength: 1024,
        pattern: ROUTE_PATH_PATTERN,
        description:
          'A path starting with "/": letters, digits and -._~!$&\'()+,=:@/% (no ";", "*", "?", "#" or spaces).',
      }),
      {
        minItems: 1,
        maxItems: 64,
        description: 'Paths matched by the route: prefixes on segment boundaries unless pathType is Exact.',
      },
    ),
    pathType: Type.Optional(
      Type.Union([Type.Literal('Prefix'), Type.Literal('Exact')], {
        description: 'Prefix (default): /a matches /a and /a/b but not /ab. Exact: the path must equal.',
      }),
    ),
    methods: Type.Optional(
      Type.Array(
        Type.Union(
          HTTP_METHODS.map((m) => Type.Literal(m)),
          { description: 'An HTTP method.' },
        ),
        { maxItems: 8, description: 'Methods matched; all when omitted.', 'x-kubernetes-list-type': 'set' },
      ),
    ),
    hosts: Type.Optional(
      Type.Array(
        Type.String({
          maxLength: 253,
          pattern: HOST_PATTERN,
          description: 'A host name, or *.suffix for any one label.',
        }),
        { maxItems: 16, description: 'Host header values matched; any host when omitted.' },
      ),
    ),
    headers: Type.Optional(
      Type.Array(HeaderMatch, { maxItems: 16, description: 'Headers that must all match.' }),
    ),
    stripPrefix: Type.Optional(
      Type.Boolean({ description: 'Remove the matched path prefix before forwarding (default false).' }),
    ),
    plugins: Type.Optional(
      Type.Array(PluginRef, {
        maxItems: 32,
        description:
          'GatewayPlugins for this route; one of the same plugin type at service scope is overridden.',
      }),
    ),
    httpsRedirect: Type.Optional(
      Type.Boolean({
        description:
          'Answer plain-HTTP requests with 308 to the same URL over https (path and query kept); ' +
          'the TLS listener serves the route as usual (default false).',
      }),
    ),
  },
  {
    additionalProperties: false,
    description: 'One route: what requests it matches and the plugins it runs.',
  },
);

export const RouteTls = Type.Object(
  {
    hosts: Type.Array(
      Type.String({
        maxLength: 253,
        pattern: HOST_PATTERN,
        description: 'A host name, or *.suffix for any one label.',
      }),
      {
        minItems: 1,
        maxItems: 16,
        description: 'TLS server names (SNI) this certificate is presented for; it must cover each.',
        'x-kubernetes-list-type': 'set',
      },
    ),
    secretName: {
      ...Name,
      description: 'A Secret of type kubernetes.io/tls in this namespace (keys tls.crt and tls.key).',
    },
  },
  {
    additionalProperties: false,
    description: "A certificate for some hosts on the gateway's TLS listener (--https-port).",
  },
);

export const GatewayRouteSpec = Type.Object(
  {
    service: Service,
    tls: Type.Optional(
      Type.Array(RouteTls, {
        maxItems: 16,
        description:
          'Certificates by host for the TLS listener (like Ingress spec.tls). A host claimed with another ' +
          'Secret by an older GatewayRoute is a conflict.',
      }),
    ),
    plugins: Type.Optional(
      Type.Array(PluginRef, {
        maxItems: 32,
        description: 'GatewayPlugins applied to every route of the service.',
      }),
    ),
    routes: Type.Array(RouteRule, {
      minItems: 1,
      maxItems: 256,
      description: 'The routes of the service.',
      'x-kubernetes-validations': [
        { rule: 'self.all(r, self.exists_one(o, o.name == r.name))', message: 'route names must be unique' },
      ],
    }),
  },
  { additionalProperties: false, description: 'A backend service and its routes.' },
);
export type GatewayRouteSpec = Static<typeof GatewayRouteSpec>;
export type RouteRule = Static<typeof RouteRule>;
export type RouteTls = Static<typeof RouteTls>;

export interface GatewayRoute {
  apiVersion: 'sluice.dev/v1alpha1';
  kind: 'GatewayRoute';
  metadata: ObjectMeta;
  spec: GatewayRouteSpec;
  status?: Static<typeof Status>;
}
