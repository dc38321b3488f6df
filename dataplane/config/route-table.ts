/**
 * THE CONTRACT between controller and data plane: the RouteTable a snapshot carries.
 * Plain JSON. The controller produces it (controller/compile); the data plane checks it again
 * at the door (validate.ts) before building a runtime. Ids are paths that say where an entry
 * came from: route/<ns>/<name>/<route-name>/<match-index>, upstream/<ns>/<service>/<hash5>.
 */
import { type Static, Type } from '@sinclair/typebox';
import { HANDLER_MANIFESTS, PLUGIN_NAMES } from './catalog.ts';
import { MAX_TIMEOUT_MS } from './duration.ts';
import { HOST_NAME_CHARS } from './http-grammar.ts';
import { NAMED_ORIGIN_PATTERN } from './origins.ts';
import { ROUTE_PATH_PATTERN } from './path-grammar.ts';

export const TABLE_VERSION = 1;

export const PathMatch = Type.Union([
  Type.Object(
    {
      type: Type.Union([Type.Literal('Exact'), Type.Literal('Prefix')]),
      /** Normalized: starts with "/", no dot segments, no "//", no trailing "/" except the root; pchar only, no ";" or "*". */
      value: Type.String({ minLength: 1, maxLength: 1024, pattern: ROUTE_PATH_PATTERN }),
    },
    { additionalProperties: false },
  ),
  Type.Object(
    {
      /**
       * A regular expression (path-regex.ts: case-insensitive, anchored at the path's start), as
       * an Ingress path under ingress-nginx's use-regex. Checked at the door: it compiles and
       * cannot backtrack catastrophically. Ranks after Exact and before Prefix paths.
       */
      type: Type.Literal('RegularExpression'),
      value: Type.String({ minLength: 1, maxLength: 1024 }),
    },
    { additionalProperties: false },
  ),
]);

/** One query parameter a request must carry (RouteMatch.query). */
export const QueryMatch = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 256 }),
    value: Type.String({ maxLength: 1024 }),
    /** Absent: the value must equal. */
    type: Type.Optional(Type.Literal('RegularExpression')),
  },
  { additionalProperties: false },
);

export const RouteMatch = Type.Object(
  {
    path: PathMatch,
    /** Upper-case methods; absent = any. */
    methods: Type.Optional(Type.Array(Type.String({ pattern: '^[A-Z]+$' }), { minItems: 1 })),
    /**
     * Lower-case host names or "*.suffix"; absent = any. "*.suffix" takes one label, or on a
     * route that names listeners (Route.listeners) one or more, as Gateway API hostnames do.
     */
    hosts: Type.Optional(Type.Array(Type.String({ minLength: 1 }), { minItems: 1 })),
    /**
     * Lower-case names; all must match: the value exactly, or with type RegularExpression a
     * pattern it matches whole (config/regex.ts, as query matches). An absent header never matches.
     */
    headers: Type.Optional(
      Type.Array(
        Type.Object(
          {
            name: Type.String({ minLength: 1 }),
            type: Type.Optional(Type.Literal('RegularExpression')),
            value: Type.String(),
          },
          { additionalProperties: false },
        ),
        {
          minItems: 1,
        },
      ),
    ),
    /**
     * Cookies that must all be sent with these exact values (the first of a name in the Cookie
     * header, as the balancer reads one), as an Ingress's canary-by-cookie asks. Ranks after query.
     */
    cookies: Type.Optional(
      Type.Array(
        Type.Object(
          {
            name: Type.String({ minLength: 1, pattern: "^[!#$%&'*+.^_`|~0-9A-Za-z-]+$" }),
            value: Type.String(),
          },
          { additionalProperties: false },
        ),
        { minItems: 1, maxItems: 16 },
      ),
    ),
    /**
     * Query parameters that must all match: the first value of the name (case-sensitive, as
     * decoded by URLSearchParams: percent escapes and "+" as a space) equals `value`, or with
     * type RegularExpression matches it whole (config/regex.ts: anchored, refused when it could
     * backtrack catastrophically). A name absent from the query never matches. Ranks after headers.
     */
    query: Type.Optional(Type.Array(QueryMatch, { minItems: 1, maxItems: 16 })),
    /**
     * A parameter of a media type in Accept (any of its ranges) must have this value, e.g.
     * `Accept: application/vnd.x+json; version=2` for { parameter: "version", value: "2" }.
     * Parameter lower-case; the value compared exactly (quotes removed). Ranks as one header match.
     */
    mediaType: Type.Optional(
      Type.Object(
        {
          parameter: Type.String({ minLength: 1, pattern: "^[!#$%&'*+.^_`|~0-9a-z-]+$" }),
          value: Type.String({ minLength: 1 }),
        },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
);

export const SourceRef = Type.Object(
  {
    kind: Type.String(),
    namespace: Type.String(),
    name: Type.String(),
    generation: Type.Integer({ minimum: 0 }),
  },
  { additionalProperties: false },
);

export const PluginInstance = Type.Object(
  {
    /** plugin/<ns>/<GatewayPlugin name> */
    id: Type.String({ minLength: 1 }),
    name: Type.Union(PLUGIN_NAMES.map((n) => Type.Literal(n))),
    /** Validated against its manifest's schema (catalog.ts). */
    config: Type.Record(Type.String(), Type.Unknown()),
    source: SourceRef,
  },
  { additionalProperties: false },
);

/** The route's terminal step: one of the handler kinds of the catalog (proxy, …), each with its own shape. */
export const Handler = Type.Union(HANDLER_MANIFESTS.map((m) => m.schema));

export const Route = Type.Object(
  {
    id: Type.String({ minLength: 1 }),
    source: SourceRef,
    match: RouteMatch,
    /** Remove the matched prefix before forwarding (a Prefix match; the same as rewrite.path ReplacePrefixMatch "/"). */
    stripPrefix: Type.Boolean(),
    /**
     * What the upstream is sent in place of the request's (Gateway API's URLRewrite), applied by
     * the proxy (upstream/path.ts): `path` replaces the whole path or the matched prefix (not
     * with stripPrefix, which is one such rewrite), or, on a RegularExpression path match, is
     * the whole path built from the match's captures (ReplaceFullPathWithCaptures: "$1" … "$9"
     * in `value`, ingress-nginx's rewrite-target); `hostname` is the Host header the upstream
     * gets (absent: the upstream url's host, as always).
     */
    rewrite: Type.Optional(
      Type.Object(
        {
          hostname: Type.Optional(
            Type.String({ minLength: 1, maxLength: 253, pattern: `^${HOST_NAME_CHARS}$` }),
          ),
          path: Type.Optional(
            Type.Object(
              {
                type: Type.Union([
                  Type.Literal('ReplaceFullPath'),
                  Type.Literal('ReplacePrefixMatch'),
                  Type.Literal('ReplaceFullPathWithCaptures'),
                ]),
                /** Written normalized (path-grammar.ts rewritePathProblem); a trailing "/" is kept. */
                value: Type.String({ minLength: 1, maxLength: 1024, pattern: ROUTE_PATH_PATTERN }),
              },
              { additionalProperties: false },
            ),
          ),
        },
        { additionalProperties: false, minProperties: 1 },
      ),
    ),
    /** In the order the controller resolved them; the data plane orders them by phase. */
    plugins: Type.Array(PluginInstance),
    handler: Handler,
    /**
     * The route serves a deprecated API version: these header values go on every response
     * (Deprecation RFC 9745, Sunset RFC 8594, Link), and from goneAtMs on the route answers 410.
     */
    deprecation: Type.Optional(
      Type.Object(
        {
          deprecation: Type.String({ pattern: '^@-?[0-9]+$' }),
          sunset: Type.Optional(Type.String({ minLength: 1 })),
          link: Type.Optional(Type.String({ minLength: 1 })),
          goneAtMs: Type.Optional(Type.Integer()),
        },
        { additionalProperties: false },
      ),
    ),
    /** On the cleartext listener, answer 308 to the same URL over https (the TLS listener serves it). */
    httpsRedirect: Type.Optional(Type.Literal(true)),
    /**
     * The Gateway listeners (table.listeners ids) this route is served on, and only there; absent:
     * it is served on the data plane's own proxy ports (--proxy-port, --https-port), as
     * GatewayRoutes and Ingresses are. Routes from HTTPRoute and GRPCRoute always name theirs.
     */
    listeners: Type.Optional(Type.Array(Type.String({ minLength: 1 }), { minItems: 1 })),
    /**
     * This route's WebSocket limits, each in place of the data plane's (0: none), and the origins
     * whose pages may open one (a handshake with another Origin gets 403; none: any).
     */
    websocket: Type.Optional(
      Type.Object(
        {
          idleTimeoutMs: Type.Optional(Type.Integer({ minimum: 0, maximum: MAX_TIMEOUT_MS })),
          maxMessageBytes: Type.Optional(Type.Integer({ minimum: 0 })),
          allowedOrigins: Type.Optional(
            Type.Array(Type.String({ pattern: NAMED_ORIGIN_PATTERN, maxLength: 300 }), {
              minItems: 1,
              maxItems: 256,
            }),
          ),
        },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
);

/** One address a Service's EndpointSlices name ready: where a connection goes, nothing else. */
export const Endpoint = Type.Object(
  {
    /** An IPv4 or IPv6 address as written in an EndpointSlice (no brackets, no zone); checked at the door. */
    address: Type.String({ minLength: 1, maxLength: 45 }),
    port: Type.Integer({ minimum: 1, maximum: 65535 }),
  },
  { additionalProperties: false },
);

/** The attributes of a session-affinity cookie the data plane sets (Balance hashOn.cookie.set). */
export const StickyCookie = Type.Object(
  {
    path: Type.String({ pattern: '^/[\\x21-\\x3a\\x3c-\\x7e]*$', maxLength: 1024 }),
    /** Max-Age, seconds; none: a session cookie. */
    maxAgeS: Type.Optional(Type.Integer({ minimum: 1, maximum: 400 * 86_400 })),
    sameSite: Type.Optional(Type.Union([Type.Literal('Strict'), Type.Literal('Lax'), Type.Literal('None')])),
    secure: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);
export type StickyCookie = Static<typeof StickyCookie>;

/**
 * How requests are spread over an upstream's endpoints (default: round robin).
 * - round-robin: each endpoint in turn.
 * - least-request: the endpoint with the fewest requests in flight from this process (ties in turn).
 * - consistent-hash: rendezvous hashing of a request header's or cookie's value, so a value keeps
 *   its endpoint and an endpoint that leaves moves only its own values; a request without the
 *   value goes round robin.
 */
export const Balance = Type.Object(
  {
    policy: Type.Union([
      Type.Literal('round-robin'),
      Type.Literal('least-request'),
      Type.Literal('consistent-hash'),
    ]),
    /** For consistent-hash only (and required there): a lower-case header name, or a cookie name. */
    hashOn: Type.Optional(
      Type.Union([
        Type.Object(
          { header: Type.String({ pattern: "^[!#$%&'*+.^_`|~0-9a-z-]+$", maxLength: 256 }) },
          { additionalProperties: false },
        ),
        Type.Object(
          {
            cookie: Type.String({ pattern: "^[!#$%&'*+.^_`|~0-9A-Za-z-]+$", maxLength: 256 }),
            /**
             * Session affinity (ingress-nginx's affinity: cookie): a request without the cookie
             * gets a new random value, hashed like any, and the response sets the cookie with
             * these attributes, so the client's next requests go to the same endpoint.
             */
            set: Type.Optional(StickyCookie),
          },
          { additionalProperties: false },
        ),
      ]),
    ),
  },
  { additionalProperties: false },
);

/**
 * Passive outlier detection over an upstream's endpoints (Envoy's consecutive-5xx, Kong's passive
 * health checks): an endpoint whose tries fail `consecutiveFailures` times in a row (a 5xx, or no
 * response: connect failure, reset, timeout) is ejected, left out of the balance, for
 * baseEjectionMs × the times it has been ejected, at most maxEjectionMs; never more than
 * maxEjectionPercent of the endpoints at once (rounded down).
 */
export const OutlierDetection = Type.Object(
  {
    consecutiveFailures: Type.Integer({ minimum: 1, maximum: 1000 }),
    baseEjectionMs: Type.Integer({ minimum: 1 }),
    maxEjectionMs: Type.Integer({ minimum: 1 }),
    maxEjectionPercent: Type.Integer({ minimum: 0, maximum: 100 }),
  },
  { additionalProperties: false },
);

export const Upstream = Type.Object(
  {
    /**
     * A hash of the settings (controller/compile/resolve-upstreams.ts) WITHOUT `endpoints`: pods
     * come and go on every scale event, and the data plane keeps one upstream (its warm
     * connections, breaker and retry budget) per id, updating its endpoints in place.
     */
    id: Type.String({ minLength: 1 }),
    /**
     * Origin plus an optional base path, e.g. http://10.0.0.7:8080/v1 (no query, no fragment).
     * With `endpoints` it still gives the scheme, the base path, the Host header and the TLS
     * server name; the endpoints say only where connections go.
     */
    url: Type.String({ pattern: '^https?://' }),
    /**
     * How requests travel to it: absent, HTTP/1.1 (or h2 by ALPN over https); 'h2c', HTTP/2 with
     * prior knowledge over cleartext (an http:// url only), as gRPC servers without TLS and
     * Services whose port has appProtocol kubernetes.io/h2c speak; request and response stream
     * both ways, trailers included (gRPC's status is in them).
     */
    protocol: Type.Optional(Type.Literal('h2c')),
    /**
     * A Service's ready endpoints (from its EndpointSlices), unique; absent: connect to the
     * url's host. Empty: no endpoint is ready, and requests get 503 SLC_ERR_UPSTREAM_NO_ENDPOINTS.
     */
    endpoints: Type.Optional(Type.Array(Endpoint)),
    /** Only with endpoints. */
    balance: Type.Optional(Balance),
    /** Only with endpoints. */
    outlierDetection: Type.Optional(OutlierDetection),
    timeouts: Type.Object(
      {
        connectMs: Type.Integer({ minimum: 1 }),
        responseMs: Type.Integer({ minimum: 1 }),
        idleMs: Type.Integer({ minimum: 1 }),
        /**
         * Longest wait for the upstream to take more of a streamed request body (between two
         * successive writes to it, as nginx's proxy_send_timeout); absent: only responseMs bounds it.
         */
        sendMs: Type.Optional(Type.Integer({ minimum: 1 })),
        /** Overall deadline to response headers, retries included. */
        requestMs: Type.Optional(Type.Integer({ minimum: 1 })),
      },
      { additionalProperties: false },
    ),
    retries: Type.Optional(
      Type.Object(
        {
          attempts: Type.Integer({ minimum: 1, maximum: 10 }),
          statuses: Type.Array(Type.Integer({ minimum: 500, maximum: 599 })),
          perTryMs: Type.Optional(Type.Integer({ minimum: 1 })),
          backoffBaseMs: Type.Integer({ minimum: 0 }),
          backoffMaxMs: Type.Integer({ minimum: 0 }),
          budgetPercent: Type.Integer({ minimum: 0, maximum: 100 }),
          /** Retries always allowed, a second, over the budget's 10 s window (upstream/retry-budget.ts). */
          minRetriesPerSecond: Type.Integer({ minimum: 0, maximum: 1000 }),
          idempotentBackend: Type.Boolean(),
        },
        { additionalProperties: false },
      ),
    ),
    breaker: Type.Optional(
      Type.Object(
        {
          errorPercent: Type.Integer({ minimum: 1, maximum: 100 }),
          minRequests: Type.Integer({ minimum: 1 }),
          windowMs: Type.Integer({ minimum: 1 }),
          openMs: Type.Integer({ minimum: 1 }),
          halfOpenRequests: Type.Integer({ minimum: 1 }),
        },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
);

/**
 * A certificate served on the TLS listener to clients whose SNI names one of its hosts (exact,
 * or "*.suffix" for any one label). From a kubernetes.io/tls Secret; the data plane builds one
 * SecureContext per entry when the snapshot is applied. Absent from tables without TLS, so
 * their hash is what it was before certificates existed.
 */
export const Certificate = Type.Object(
  {
    /** certificate/<ns>/<Secret name> */
    id: Type.String({ minLength: 1 }),
    /** Lower-case host names or "*.suffix", sorted; no host is in two entries. */
    hosts: Type.Array(Type.String({ minLength: 1 }), { minItems: 1 }),
    /** PEM: the leaf certificate, then its chain. */
    cert: Type.String({ minLength: 1 }),
    /** PEM private key of the leaf. */
    key: Type.String({ minLength: 1 }),
  },
  { additionalProperties: false },
);

/**
 * A Gateway listener (Gateway API): a port the data plane opens on its --host address while a
 * snapshot has it, serving only the routes that name it (Route.listeners). The controller
 * allocates the port per Gateway listener (the targetPort of that Gateway's Service), so every
 * Gateway gets an address of its own.
 *
 * Several listeners of one Gateway may share a port, with different hostnames: a request (its
 * Host; on HTTPS, its SNI for the certificate) goes to the listener whose hostname matches it
 * most specifically — an exact name, then the longest "*.suffix", then the listener without a
 * hostname — and only that listener's routes are candidates, so a route attached to the
 * catch-all listener never answers for a host another listener claims (listener isolation).
 * No listener matching the host: 404. Absent from tables without Gateway API objects, so their
 * hash is what it was before listeners existed.
 */
/**
 * Client certificates asked of a Gateway HTTPS port's clients (Gateway spec.tls.frontend),
 * verified against caBundle. AllowValidOnly: a connection without a certificate that verifies is
 * closed after the handshake; AllowInsecureFallback: it is served anyway. Every listener of a
 * port carries the same (the Gateway's setting is per port).
 */
export const ClientValidation = Type.Object(
  {
    /** PEM CA certificates, the trust anchors. */
    caBundle: Type.String({ minLength: 1 }),
    mode: Type.Union([Type.Literal('AllowValidOnly'), Type.Literal('AllowInsecureFallback')]),
  },
  { additionalProperties: false },
);

export const Listener = Type.Object(
  {
    /** listener/<ns>/<gateway>/<listener name> */
    id: Type.String({ minLength: 1 }),
    port: Type.Integer({ minimum: 1, maximum: 65535 }),
    /**
     * HTTP: HTTP/1.1, and HTTP/2 with prior knowledge (h2c, as gRPC clients without TLS speak).
     * HTTPS: TLS with ALPN h2 and http/1.1. Every listener on a port has the same protocol.
     */
    protocol: Type.Union([Type.Literal('HTTP'), Type.Literal('HTTPS')]),
    /** Lower-case host name or "*.suffix"; absent: any host. Unique per port. */
    hostname: Type.Optional(Type.String({ minLength: 1, maxLength: 253 })),
    /**
     * HTTPS only (and required there): ids of table.certificates entries this listener presents,
     * chosen by SNI among them (the first when none covers the SNI). A certificate a listener
     * names is served only on listeners, never on --https-port, and need not have hosts unique
     * across the table, only within each listener.
     */
    certificates: Type.Optional(Type.Array(Type.String({ minLength: 1 }), { minItems: 1 })),
    /** HTTPS only: client certificate validation (the same on every listener of the port). */
    clientValidation: Type.Optional(ClientValidation),
  },
  { additionalProperties: false },
);

export const RouteTable = Type.Object(
  {
    version: Type.Literal(TABLE_VERSION),
    /** In precedence order: the first route that matches a request wins. */
    routes: Type.Array(Route),
    upstreams: Type.Array(Upstream),
    /** Sorted by id. */
    certificates: Type.Optional(Type.Array(Certificate)),
    /** Sorted by id. */
    listeners: Type.Optional(Type.Array(Listener)),
  },
  { additionalProperties: false },
);

export const Snapshot = Type.Object(
  {
    /** sha256 hex of the canonical JSON of table. */
    hash: Type.String({ pattern: '^[0-9a-f]{64}$' }),
    table: RouteTable,
  },
  { additionalProperties: false },
);

export type PathMatch = Static<typeof PathMatch>;
export type RouteDeprecation = NonNullable<Static<typeof Route>['deprecation']>;
export type RouteMatch = Static<typeof RouteMatch>;
export type QueryMatch = Static<typeof QueryMatch>;
export type SourceRef = Static<typeof SourceRef>;
export type PluginInstance = Static<typeof PluginInstance>;
export type Route = Static<typeof Route>;
export type Upstream = Static<typeof Upstream>;
export type Endpoint = Static<typeof Endpoint>;
export type Balance = Static<typeof Balance>;
export type OutlierDetection = Static<typeof OutlierDetection>;
export type Certificate = Static<typeof Certificate>;
export type Listener = Static<typeof Listener>;
export type ClientValidation = Static<typeof ClientValidation>;
export type RouteTable = Static<typeof RouteTable>;
export type Snapshot = Static<typeof Snapshot>;
