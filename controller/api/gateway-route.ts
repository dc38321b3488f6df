/**
 * GatewayRoute: one backend service and the routes that reach it (the spec's §2.3 shape:
 * service.name, service.url, service.routes[].name, service.routes[].paths[]), with
 * GatewayPlugin references at service scope (spec.plugins) and route scope (routes[].plugins).
 * A route proxies to the service unless it names another handler kind (routes[].aggregate, …):
 * those fields come from the catalog's handler manifests, at most one per route.
 */
import { type Static, type TSchema, Type } from '@sinclair/typebox';
import { BackendRef } from '../../dataplane/config/backend-ref.ts';
import { HANDLER_MANIFESTS, handlerManifest } from '../../dataplane/config/catalog.ts';
import { TOKEN_PATTERN } from '../../dataplane/config/http-grammar.ts';
import { NAMED_ORIGIN_PATTERN } from '../../dataplane/config/origins.ts';
import { ROUTE_PATH_PATTERN } from '../../dataplane/config/path-grammar.ts';
import { Duration, Name, type ObjectMeta, PluginRef, type Status } from './common.ts';

const HTTP_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'TRACE'] as const;
/** A lower-case host name, or "*." and a name for any one label in front of it. */
const HOST_PATTERN = '^(\\*\\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$';

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
    send: Type.Optional({
      ...Duration,
      description:
        'Longest wait for the upstream to take more of a streamed request body, between two successive writes to it (default: none; timeouts.response bounds it).',
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
        description:
          'Retries allowed as a share of requests over the last 10 s (default 20), on top of minRetriesPerSecond.',
      }),
    ),
    minRetriesPerSecond: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 1000,
        description:
          'Retries always allowed, a second, averaged over the last 10 s, whatever the traffic (default 10), ' +
          'so that attempts hold at low traffic; the budget is minRetriesPerSecond × 10 + budgetPercent of the requests.',
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

/**
 * How a backendRef's requests are spread over the Service's ready endpoints (the data plane's
 * route-table Balance). hashOn is an object of two optional fields rather than a union: a CRD
 * schema must be structural, so "exactly one, and only for consistent-hash" is said in CEL.
 */
export const Balance = Type.Object(
  {
    policy: Type.Union(
      [Type.Literal('round-robin'), Type.Literal('least-request'), Type.Literal('consistent-hash')],
      {
        description:
          'round-robin (default): each endpoint in turn. least-request: the endpoint with the fewest requests ' +
          'in flight from this data plane. consistent-hash: the value of hashOn picks the endpoint (rendezvous ' +
          'hashing: a value keeps its endpoint, and an endpoint that leaves moves only its own values); ' +
          'requests without the value go round robin.',
      },
    ),
    hashOn: Type.Optional(
      Type.Object(
        {
          header: Type.Optional(
            Type.String({
              minLength: 1,
              maxLength: 256,
              pattern: TOKEN_PATTERN,
              description: 'Hash the value of this request header (case-insensitive name), e.g. X-Tenant.',
            }),
          ),
          cookie: Type.Optional(
            Type.String({
              minLength: 1,
              maxLength: 256,
              pattern: TOKEN_PATTERN,
              description: 'Hash the value of this request cookie, e.g. a session cookie.',
            }),
          ),
          setCookie: Type.Optional(
            Type.Object(
              {
                path: Type.Optional(
                  Type.String({
                    maxLength: 1024,
                    pattern: '^/[\\x21-\\x3a\\x3c-\\x7e]*$',
                    description: "The cookie's Path (default /).",
                  }),
                ),
                maxAge: Type.Optional(
                  Type.String({
                    ...Duration,
                    description:
                      "The cookie's Max-Age, whole seconds, at most 400 days (default: none, a session cookie).",
                  }),
                ),
                sameSite: Type.Optional(
                  Type.Union([Type.Literal('Strict'), Type.Literal('Lax'), Type.Literal('None')], {
                    description: "The cookie's SameSite (None implies Secure).",
                  }),
                ),
                secure: Type.Optional(Type.Boolean({ description: 'The cookie is Secure.' })),
              },
              {
                additionalProperties: false,
                description:
                  'Session affinity: a request without the cookie gets one with a new random value (HttpOnly), ' +
                  "so the client's next requests go to the same endpoint (ingress-nginx's affinity: cookie).",
              },
            ),
          ),
        },
        {
          additionalProperties: false,
          description: 'What consistent-hash hashes: exactly one of header or cookie.',
          'x-kubernetes-validations': [
            {
              rule: 'has(self.header) != has(self.cookie)',
              message: 'exactly one of header or cookie must be set',
            },
            {
              rule: '!has(self.setCookie) || has(self.cookie)',
              message: 'setCookie needs cookie',
              fieldPath: '.setCookie',
            },
          ],
        },
      ),
    ),
  },
  {
    additionalProperties: false,
    description:
      "How requests are spread over the Service's ready endpoints (default round-robin). Only with a " +
      'backendRef: a url has no endpoints, its host is dialled as it resolves.',
    'x-kubernetes-validations': [
      {
        rule: "(self.policy == 'consistent-hash') == has(self.hashOn)",
        message: 'hashOn must be set with policy consistent-hash, and only with it',
        fieldPath: '.hashOn',
      },
    ],
  },
);

export const OutlierDetection = Type.Object(
  {
    consecutiveFailures: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 1000,
        description:
          'Failed tries in a row that eject an endpoint: a 5xx, or no response (connect failure, reset, timeout) (default 5).',
      }),
    ),
    baseEjectionTime: Type.Optional({
      ...Duration,
      description:
        'How long an ejection lasts the first time; each later one lasts this times the number of ejections (default 30s).',
    }),
    maxEjectionTime: Type.Optional({
      ...Duration,
      description: 'The longest an ejection lasts, at least baseEjectionTime (default 300s).',
    }),
    maxEjectionPercent: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 100,
        description: 'At most this share of the endpoints is ejected at once, rounded down (default 50).',
      }),
    ),
  },
  {
    additionalProperties: false,
    description:
      "Passive outlier detection over the endpoints of the service's backendRefs (spec.versions' too): an endpoint " +
      'whose tries keep failing is left out of the balance for a while, as no health check would notice sooner. ' +
      'Only with backendRef: a url has no endpoints.',
  },
);

/** The CEL rule of an object holding balance beside url or backendRef. */
const BALANCE_NEEDS_BACKEND_REF = {
  rule: '!has(self.balance) || has(self.backendRef)',
  message: 'balance applies only with backendRef (a url has no endpoints to balance)',
  fieldPath: '.balance',
};

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
    balance: Type.Optional({
      ...Balance,
      description:
        "How requests are spread over the backendRef's ready endpoints (default round-robin); also the " +
        'balance of the backendRefs of spec.versions that set none of their own.',
    }),
    timeouts: Type.Optional(Timeouts),
    retries: Type.Optional(Retries),
    circuitBreaker: Type.Optional(CircuitBreaker),
    outlierDetection: Type.Optional(OutlierDetection),
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
      BALANCE_NEEDS_BACKEND_REF,
      {
        rule: '!has(self.outlierDetection) || has(self.backendRef)',
        message: 'outlierDetection applies only with backendRef (a url has no endpoints to eject)',
        fieldPath: '.outlierDetection',
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
      description:
        'Value the header must have (exact, case-sensitive), or with type RegularExpression a pattern it must match whole.',
    }),
    type: Type.Optional(
      Type.Union([Type.Literal('Exact'), Type.Literal('RegularExpression')], {
        description:
          'Exact (default), or RegularExpression (JavaScript syntax, anchored; no nested quantifiers).',
      }),
    ),
  },
  {
    additionalProperties: false,
    description: 'A request header that must be present with this value.',
  },
);

export const QueryMatch = Type.Object(
  {
    name: Type.String({
      minLength: 1,
      maxLength: 256,
      description: 'Query parameter name (case-sensitive); its first value in the request is compared.',
    }),
    value: Type.String({
      maxLength: 1024,
      description:
        'The value it must have (exact), or with type RegularExpression a pattern it must match whole.',
    }),
    type: Type.Optional(
      Type.Union([Type.Literal('Exact'), Type.Literal('RegularExpression')], {
        description:
          'Exact (default), or RegularExpression (JavaScript syntax, anchored; no nested quantifiers).',
      }),
    ),
  },
  {
    additionalProperties: false,
    description: 'A query parameter that must be present with this value.',
  },
);

/** The handler kinds a rule may choose, by field (the catalog's manifests that have a `route` part). */
export const HANDLER_FIELDS: readonly { field: string; kind: string }[] = HANDLER_MANIFESTS.flatMap((m) =>
  'route' in m && m.route ? [{ field: m.route.field, kind: m.kind }] : [],
);

/** The CEL rule "at most one of these fields", or none when fewer than two exist (it could not fail). */
export function atMostOneRule(fields: readonly string[]): { rule: string; message: string }[] {
  if (fields.length < 2) return [];
  return [
    {
      rule: `${fields.map((f) => `(has(self.${f}) ? 1 : 0)`).join(' + ')} <= 1`,
      message: `at most one handler kind (${fields.join(', ')}) may be set`,
    },
  ];
}

const handlerProperties = Object.fromEntries(
  HANDLER_MANIFESTS.flatMap((m) =>
    'route' in m && m.route ? [[m.route.field, Type.Optional(m.route.schema as TSchema)]] : [],
  ),
);

export const RouteWebSocket = Type.Object(
  {
    idleTimeout: Type.Optional({
      ...Duration,
      description:
        'Close a WebSocket (1001 to both sides) after no frame either way for this long; "0s": never ' +
        "(default: the data plane's --ws-idle-timeout-ms).",
    }),
    maxMessageBytes: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 1024 * 1024 * 1024,
        description:
          "Close a WebSocket (1009 to both sides) on a larger message, fragments summed; 0: no limit (default: the data plane's --ws-max-message-bytes).",
      }),
    ),
    allowedOrigins: Type.Optional(
      Type.Array(
        Type.String({
          pattern: NAMED_ORIGIN_PATTERN,
          maxLength: 300,
          description:
            'An exact origin ("https://app.example.com", lower case, no path) or "https://*.example.com".',
        }),
        {
          minItems: 1,
          maxItems: 256,
          description:
            'Origins whose pages may open a WebSocket here: a handshake with another Origin gets 403 ' +
            '(cross-site WebSocket hijacking: a browser sends the cookies of this site whatever page opens it). ' +
            "Checked as well as the route's cors origins; unset: any origin (or cors's). Clients that send no Origin are not browsers and are let through.",
        },
      ),
    ),
  },
  {
    additionalProperties: false,
    description:
      "This route's WebSocket limits, in place of the data plane's, and the origins allowed to open one.",
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
    query: Type.Optional(
      Type.Array(QueryMatch, {
        maxItems: 16,
        description: 'Query parameters that must all match; ranked after headers.',
      }),
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
    websocket: Type.Optional(RouteWebSocket),
    ...handlerProperties,
  },
  {
    additionalProperties: false,
    description:
      'One route: what requests it matches, the plugins it runs, and what answers it: the service (proxied), ' +
      `or one handler kind (${HANDLER_FIELDS.map((h) => h.field).join(', ')}).`,
    ...(HANDLER_FIELDS.length > 1 && {
      'x-kubernetes-validations': atMostOneRule(HANDLER_FIELDS.map((h) => h.field)),
    }),
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

/** A version name as it appears in URLs and headers: "v2", "2024-06-01", "beta". */
/** An RFC 3339 date-time with a zone (the date itself is checked by validate/versions.ts). */
const RFC3339_PATTERN =
  '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]{1,9})?(Z|[+-][0-9]{2}:[0-9]{2})$';
const VERSION_NAME_PATTERN = '^[A-Za-z0-9]([-A-Za-z0-9._]*[A-Za-z0-9])?$';

export const VersionBackend = Type.Object(
  {
    url: Type.Optional(
      Type.String({ maxLength: 2048, description: 'Address of this backend, like service.url.' }),
    ),
    backendRef: Type.Optional(BackendRef),
    balance: Type.Optional({
      ...Balance,
      description: "How requests are spread over this backendRef's endpoints (default: service.balance).",
    }),
    weight: Type.Integer({
      minimum: 0,
      maximum: 100,
      description: "Share of the version's requests, in percent; the weights of a version sum to 100.",
    }),
  },
  {
    additionalProperties: false,
    description: 'One backend of a weighted canary: exactly one of url or backendRef, and a weight.',
    'x-kubernetes-validations': [
      {
        rule: 'has(self.url) != has(self.backendRef)',
        message: 'exactly one of url or backendRef must be set',
      },
      BALANCE_NEEDS_BACKEND_REF,
    ],
  },
);

export const Deprecation = Type.Object(
  {
    date: Type.String({
      maxLength: 64,
      pattern: RFC3339_PATTERN,
      description:
        'When the version was (or will be) deprecated, RFC 3339 (e.g. 2026-01-01T00:00:00Z): sent as ' +
        '`Deprecation: @<unix seconds>` (RFC 9745).',
    }),
    sunset: Type.Optional(
      Type.String({
        maxLength: 64,
        pattern: RFC3339_PATTERN,
        description:
          'When the version stops being served, RFC 3339; sent as `Sunset: <HTTP-date>` (RFC 8594).',
      }),
    ),
    link: Type.Optional(
      Type.String({
        maxLength: 2048,
        pattern: '^https?://[^\\s<>"]+$',
        description: 'The migration document: sent as `Link: <url>; rel="deprecation"` (and rel="sunset").',
      }),
    ),
    goneAfterSunset: Type.Optional(
      Type.Boolean({
        description: 'From the sunset date on, answer 410 problem+json instead of proxying (default false).',
      }),
    ),
  },
  {
    additionalProperties: false,
    description:
      'Deprecation of a version: headers on every response of it, and optionally 410 after its sunset.',
  },
);

export const Sticky = Type.Object(
  {
    consumer: Type.Optional(
      Type.Boolean({ description: 'Keep each authenticated consumer (jwt, key-auth) on one backend.' }),
    ),
    cookie: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 256,
        pattern: TOKEN_PATTERN,
        description: 'Keep each value of this request cookie (e.g. a session cookie) on one backend.',
      }),
    ),
  },
  {
    additionalProperties: false,
    description:
      'How a canary keeps a caller on one side: by consumer or by a cookie value (exactly one). Callers ' +
      'without one are split at random.',
    'x-kubernetes-validations': [
      {
        rule: 'has(self.consumer) != has(self.cookie)',
        message: 'exactly one of consumer or cookie must be set',
      },
    ],
  },
);

export const Version = Type.Object(
  {
    name: Type.String({
      minLength: 1,
      maxLength: 63,
      pattern: VERSION_NAME_PATTERN,
      description: 'The version, e.g. v2: used in route ids and as the default selector value.',
    }),
    path: Type.Optional(
      Type.String({
        minLength: 2,
        maxLength: 256,
        pattern: ROUTE_PATH_PATTERN,
        description:
          'Select by URL: this prefix in front of every route path (e.g. /v2: /v2/charges reaches the route ' +
          '/charges of this version). Removed before forwarding.',
      }),
    ),
    header: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 256,
        description: 'Select by header: the value of versioning.header (Accept-Version) naming this version.',
      }),
    ),
    mediaType: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 256,
        pattern: TOKEN_PATTERN,
        description:
          'Select by media type: the value of the versioning.mediaTypeParameter in Accept ' +
          '(e.g. 2 for `Accept: application/vnd.charges+json; version=2`).',
      }),
    ),
    url: Type.Optional(
      Type.String({
        maxLength: 2048,
        description: 'Backend of this version (default: service.url/backendRef).',
      }),
    ),
    backendRef: Type.Optional(BackendRef),
    balance: Type.Optional({
      ...Balance,
      description:
        "How requests are spread over this version's backendRef's endpoints (default: service.balance).",
    }),
    backends: Type.Optional(
      Type.Array(VersionBackend, {
        minItems: 2,
        maxItems: 2,
        description: 'A weighted canary: two backends whose weights sum to 100 (instead of url/backendRef).',
      }),
    ),
    sticky: Type.Optional(Sticky),
    deprecation: Type.Optional(Deprecation),
    plugins: Type.Optional(
      Type.Array(PluginRef, {
        maxItems: 32,
        description:
          'GatewayPlugins for this version (e.g. a request-transformer adding X-Gateway-Version); one of the ' +
          'same type at route or service scope is overridden.',
      }),
    ),
  },
  {
    additionalProperties: false,
    description: 'One version of the API: how requests select it, where they go, whether it is deprecated.',
    'x-kubernetes-validations': [BALANCE_NEEDS_BACKEND_REF],
  },
);

export const Versioning = Type.Object(
  {
    default: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 63,
        pattern: VERSION_NAME_PATTERN,
        description:
          'The version of requests that name none (no path prefix, header or media type); none: 404.',
      }),
    ),
    header: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 256,
        pattern: TOKEN_PATTERN,
        description: 'Header carrying the version (default Accept-Version).',
      }),
    ),
    mediaTypeParameter: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 64,
        pattern: TOKEN_PATTERN,
        description: 'Parameter of the Accept media type carrying the version (default version).',
      }),
    ),
  },
  { additionalProperties: false, description: 'How requests select one of spec.versions.' },
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
    versioning: Type.Optional(Versioning),
    versions: Type.Optional(
      Type.Array(Version, {
        minItems: 1,
        maxItems: 16,
        description:
          'Versions of the service: every route is served once per version and selector (path, header, ' +
          'media type), plus once for the default version. Absent: the routes go to service.url as they are.',
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
export type Timeouts = Static<typeof Timeouts>;
export type Retries = Static<typeof Retries>;
export type RouteTls = Static<typeof RouteTls>;
export type Version = Static<typeof Version>;
export type Balance = Static<typeof Balance>;
export type Versioning = Static<typeof Versioning>;

export interface GatewayRoute {
  apiVersion: 'sluice.dev/v1alpha1';
  kind: 'GatewayRoute';
  metadata: ObjectMeta;
  spec: GatewayRouteSpec;
  status?: Static<typeof Status>;
}

/** A backendRef written in a spec, and where: service.backendRef, a version's, a canary backend's or a handler's. */
export interface BackendRefSite {
  field: string;
  name: string;
  port: unknown;
  scheme: unknown;
}

/**
 * Every backendRef of a GatewayRoute spec, read defensively: this also runs on specs that failed
 * the schema (relevance, ResolvedRefs), so that a missing Service is reported with the rest.
 */
export function backendRefsOf(spec: unknown): BackendRefSite[] {
  const out: BackendRefSite[] = [];
  const add = (holder: unknown, at: string) => {
    const ref = (
      holder as { backendRef?: { name?: unknown; port?: unknown; scheme?: unknown } } | null | undefined
    )?.backendRef;
    if (typeof ref?.name === 'string')
      out.push({ field: `${at}.backendRef`, name: ref.name, port: ref.port, scheme: ref.scheme });
  };
  const s = spec as { service?: unknown; versions?: unknown } | null | undefined;
  add(s?.service, 'spec.service');
  const versions: unknown[] = Array.isArray(s?.versions) ? s.versions : [];
  versions.forEach((v, i) => {
    add(v, `spec.versions[${i}]`);
    const backends = (v as { backends?: unknown } | null)?.backends;
    if (Array.isArray(backends))
      for (const [j, b] of backends.entries()) add(b, `spec.versions[${i}].backends[${j}]`);
  });
  const rules: unknown[] = Array.isArray((s as { routes?: unknown } | null)?.routes)
    ? (s as { routes: unknown[] }).routes
    : [];
  rules.forEach((rule, i) => {
    for (const { field, kind } of HANDLER_FIELDS) {
      const config = (rule as Record<string, unknown> | null)?.[field];
      if (config === undefined) continue;
      for (const site of handlerManifest(kind)!.route!.backends(config))
        add(site, `spec.routes[${i}].${field}.${site.field}`);
    }
  });
  return out;
}
