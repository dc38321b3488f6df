/**
 * The ingress-nginx annotations (nginx.ingress.kubernetes.io/*) Sluice honours, declared once:
 * name → parser → effect, with ingress-nginx's meaning (its annotation reference) and where
 * Sluice differs, `differs` says how (the docs' migration table is this table). Pure.
 *
 * Every other annotation of that prefix is reported, never silently ignored: an Event on the
 * Ingress names it, and a metric counts it (controller/status/ingress-writer.ts); a `*-snippet`
 * annotation is reported as never executed (Sluice runs no configuration text from objects). A
 * value that does not parse is reported naming the annotation and the value, and only that
 * annotation is left out: the Ingress's rules keep serving.
 */

import { rewritePathProblem } from '../../dataplane/config/path-grammar.ts';
import { cidrProblem } from '../../dataplane/config/cidr.ts';
import { captureRefsProblem } from '../../dataplane/config/path-regex.ts';
import { regexProblem } from '../../dataplane/config/regex.ts';

export const NGINX_PREFIX = 'nginx.ingress.kubernetes.io/';

/** What an Ingress's honoured annotations ask of its routes (defaults as ingress-nginx's). */
export interface IngressEffects {
  /** HTTP → HTTPS (308) for hosts with TLS in the Ingress (ingress-nginx's default: true). */
  sslRedirect: boolean;
  /** HTTP → HTTPS (308) for every rule, TLS or not. */
  forceSslRedirect: boolean;
  /** Every request answered with a redirect to this URL. */
  redirect?: { url: URL; statusCode: 301 | 302 | 307 | 308 };
  /** Requests for "/" redirected (302) to this path. */
  appRoot?: string;
  /** Upstream timeouts, as GatewayRoute durations. */
  timeouts: { connect?: string; response?: string; idle?: string; send?: string };
  /** Tries in all (the first and the retries). */
  tries?: number;
  /** rate-limiting, per client IP. */
  rateLimit: { second?: number; minute?: number };
  /** cors, when enable-cors is true. */
  cors: {
    enabled: boolean;
    origins?: string[];
    methods?: string[];
    headers?: string[];
    expose?: string[];
    credentials?: boolean;
    maxAge?: number;
  };
  backendProtocol: 'HTTP' | 'HTTPS' | 'GRPC' | 'GRPCS';
  /** Prefix and ImplementationSpecific paths are regular expressions. */
  useRegex: boolean;
  /** The path the back end gets, "$1" … "$9" the path regex's captures (implies useRegex). */
  rewriteTarget?: string;
  /** X-Forwarded-Prefix sent to the back end. */
  forwardedPrefix?: string;
  /** The Host header the back end gets. */
  upstreamVhost?: string;
  /** canary: "true": this Ingress's paths are the canary of the same host and path of another. */
  canary: {
    enabled: boolean;
    weight?: number;
    total: number;
    header?: string;
    headerValue?: string;
    /** canary-by-header-pattern: as ingress-nginx reads it, found anywhere in the value (canaryHeaderRegex). */
    headerPattern?: string;
    cookie?: string;
  };
  /** whitelist-source-range / denylist-source-range: the ip-restriction plugin's allow and deny. */
  sourceRanges: { allow?: string[]; deny?: string[] };
  /** proxy-body-size in bytes: the request-size-limiting plugin; 0: no limit of its own. */
  proxyBodySize?: number;
  /** limit-connections: the concurrency-limiting plugin's requests in progress per client address. */
  connections?: number;
  /** auth-type: basic with auth-secret (htpasswd hashes in a Secret of the Ingress's namespace). */
  basicAuth: {
    type?: 'basic';
    /** The Secret's name (in the Ingress's namespace: readAnnotations refuses another). */
    secret?: string;
    /** The namespace "namespace/name" gave, if any. */
    secretNamespace?: string;
    /** auth-file: the Secret's key "auth" is an htpasswd file; auth-map: its keys are users, values hashes. */
    secretType: 'auth-file' | 'auth-map';
    realm?: string;
  };
  /** auth-url and its family: the ext-auth plugin's sub-request. */
  extAuth: {
    url?: string;
    method?: string;
    signin?: string;
    signinParam?: string;
    responseHeaders?: string[];
    requestRedirect?: string;
  };
  /** affinity: cookie and the session-cookie-* family: the balance's sticky cookie. */
  affinity: {
    cookie: boolean;
    name?: string;
    path?: string;
    maxAge?: number;
    expires?: number;
    sameSite?: 'Strict' | 'Lax' | 'None';
    secure?: boolean;
  };
  /** custom-http-errors: the upstream statuses default-backend answers in place of. */
  customHttpErrors?: number[];
  /** default-backend: a Service of the Ingress's namespace answering the custom-http-errors and when the backend has no endpoint. */
  defaultBackend?: string;
  /**
   * Authentication annotations whose value could not be read (failClosed): the Ingress's paths
   * answer 500 rather than serve without the authentication they ask for.
   */
  unreadableAuth: string[];
}

export function defaultEffects(): IngressEffects {
  return {
    sslRedirect: true,
    forceSslRedirect: false,
    timeouts: {},
    rateLimit: {},
    cors: { enabled: false },
    backendProtocol: 'HTTP',
    useRegex: false,
    canary: { enabled: false, total: 100 },
    sourceRanges: {},
    basicAuth: { secretType: 'auth-file' },
    extAuth: {},
    affinity: { cookie: false },
    unreadableAuth: [],
  };
}

/** A value that cannot be read, and why. */
interface Invalid {
  invalid: string;
}

interface Annotation<T> {
  /** After the prefix. */
  name: string;
  parse(value: string): T | Invalid;
  apply(effects: IngressEffects, value: T): void;
  /** What it does in Sluice (one line: the docs' table). */
  effect: string;
  /** Where Sluice's behaviour differs from ingress-nginx's. */
  differs?: string;
  /**
   * A value that cannot be read denies the Ingress's paths (500) rather than leaving the
   * annotation out: authentication, which left out would serve them open.
   */
  failClosed?: true;
}

const annotation = <T>(a: Annotation<T>): Annotation<unknown> => a as Annotation<unknown>;

const bool = (v: string): boolean | Invalid =>
  v === 'true' ? true : v === 'false' ? false : { invalid: 'must be "true" or "false"' };

const integer =
  (min: number, max: number) =>
  (v: string): number | Invalid => {
    const n = /^\d{1,10}$/.test(v.trim()) ? Number(v.trim()) : Number.NaN;
    return Number.isInteger(n) && n >= min && n <= max
      ? n
      : { invalid: `must be a whole number from ${min} to ${max}` };
  };

/** ingress-nginx's proxy timeouts: whole seconds. */
const seconds = (v: string): string | Invalid => {
  const n = integer(1, 3600)(v);
  return typeof n === 'number' ? `${n}s` : { invalid: 'must be whole seconds from 1 to 3600' };
};

const absoluteUrl = (v: string): URL | Invalid => {
  try {
    const url = new URL(v.trim());
    if (url.protocol === 'http:' || url.protocol === 'https:') return url;
  } catch {}
  return { invalid: 'must be an absolute http:// or https:// URL' };
};

const path = (v: string): string | Invalid =>
  /^\/[A-Za-z0-9\-._~!$&'()+,=:@/%]*$/.test(v.trim())
    ? v.trim()
    : { invalid: 'must be a path starting with "/"' };

const list = (v: string): string[] =>
  v
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);

/** ingress-nginx's source ranges: comma-separated addresses and CIDR ranges, IPv4 or IPv6. */
const cidrs = (v: string): string[] | Invalid => {
  const entries = list(v);
  if (entries.length === 0) return { invalid: 'must list IP addresses or CIDR ranges' };
  for (const entry of entries) {
    const problem = cidrProblem(entry);
    if (problem) return { invalid: `holds ${JSON.stringify(entry)}, which ${problem}` };
  }
  return entries;
};

/**
 * canary-by-header-pattern as a header match's pattern (matched whole, config/regex.ts): ingress-nginx
 * finds it anywhere in the value (ngx.re.match, unanchored), so it is wrapped to match so.
 */
export const canaryHeaderRegex = (pattern: string): string => `.*(?:${pattern}).*`;

/** nginx's size syntax (client_max_body_size): bytes, or with k, m or g (1024-based); 0 allowed. */
const nginxSize = (v: string): number | Invalid => {
  const m = /^(\d{1,15})([kmg]?)$/i.exec(v.trim());
  const n = m ? Number(m[1]) * 1024 ** ' kmg'.indexOf(m[2].toLowerCase() || ' ') : Number.NaN;
  return Number.isSafeInteger(n) ? n : { invalid: 'must be a size: bytes, or a number with k, m or g (8m)' };
};
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
/**
 * A Secret by name, or "namespace/name" as ingress-nginx also takes it. Whether the namespace may
 * be another than the Ingress's is readAnnotations' question (it knows the Ingress's namespace).
 */
const secretRef = (v: string): { namespace?: string; name: string } | Invalid => {
  const parts = v.trim().split('/');
  const name = parts.at(-1) ?? '';
  const namespace = parts.length === 2 ? parts[0] : undefined;
  return parts.length <= 2 &&
    DNS_SUBDOMAIN.test(name) &&
    name.length <= 253 &&
    (namespace === undefined || (DNS_LABEL.test(namespace) && namespace.length <= 63))
    ? { ...(namespace !== undefined && { namespace }), name }
    : { invalid: 'must be the name of a Secret, or "namespace/name"' };
};

const redirect =
  (statusCode: 301 | 302) =>
  (e: IngressEffects, url: URL): void => {
    e.redirect = { url, statusCode: e.redirect?.statusCode ?? statusCode };
  };

/** The table. Order matters only where one annotation refines another (a code after its redirect). */
export const ANNOTATIONS: readonly Annotation<unknown>[] = [
  annotation({
    name: 'use-regex',
    parse: bool,
    apply: (e, v) => {
      e.useRegex = v;
    },
    effect:
      "true: the Ingress's Prefix and ImplementationSpecific paths are regular expressions, matched case-insensitively from the start of the path (nginx's location ~*); Exact paths stay exact",
    differs:
      "it applies to this Ingress's paths only (ingress-nginx makes every path of the host a regex, across Ingresses); a pattern that could backtrack catastrophically is refused",
  }),
  annotation({
    name: 'rewrite-target',
    parse: (v) => {
      const target = v.trim();
      const problem = rewritePathProblem(target) ?? captureRefsProblem(target, 9);
      return problem ? { invalid: problem } : target;
    },
    apply: (e, v) => {
      e.rewriteTarget = v;
      e.useRegex = true; // as ingress-nginx: rewrite-target makes the paths regular expressions
    },
    effect:
      'the whole path the back end gets, "$1" … "$9" the path regex\'s captures (path /api(/|$)(.*), target /$2: /api/users → /users); the query is kept; implies use-regex',
    differs:
      'a reference to a group the path lacks leaves that path out (reported; nginx would refuse its whole configuration); the result is normalized ("//" collapsed, dot segments resolved); not on Exact paths with references, nor on the default backend',
  }),
  annotation({
    name: 'ssl-redirect',
    parse: bool,
    apply: (e, v) => {
      e.sslRedirect = v;
    },
    effect:
      "true (default): plain-HTTP requests for a host in spec.tls get 308 to https (the route's httpsRedirect)",
  }),
  annotation({
    name: 'force-ssl-redirect',
    parse: bool,
    apply: (e, v) => {
      e.forceSslRedirect = v;
    },
    effect: 'true: every plain-HTTP request gets 308 to https, TLS in the Ingress or not',
  }),
  annotation({
    name: 'permanent-redirect',
    parse: absoluteUrl,
    apply: redirect(301),
    effect: 'every request answered 301 (or permanent-redirect-code) with Location: the URL',
    differs: "the request's query is kept on the Location (nginx's `return` drops it)",
  }),
  annotation({
    name: 'permanent-redirect-code',
    parse: (v) => {
      const n = integer(300, 308)(v);
      return n === 301 || n === 302 || n === 307 || n === 308
        ? n
        : { invalid: 'must be 301, 302, 307 or 308' };
    },
    apply: (e, v) => {
      if (e.redirect) e.redirect.statusCode = v as 301 | 302 | 307 | 308;
    },
    effect: "the status of permanent-redirect's answer",
  }),
  annotation({
    name: 'temporal-redirect',
    parse: absoluteUrl,
    apply: (e, url) => {
      // ingress-nginx: a permanent redirect, when both are set, wins.
      if (e.redirect === undefined) e.redirect = { url, statusCode: 302 };
    },
    effect: 'every request answered 302 with Location: the URL',
    differs: "the request's query is kept on the Location",
  }),
  annotation({
    name: 'app-root',
    parse: path,
    apply: (e, v) => {
      e.appRoot = v;
    },
    effect: 'a request for "/" is answered 302 to this path, on each host of the Ingress',
  }),
  annotation({
    name: 'proxy-connect-timeout',
    parse: seconds,
    apply: (e, v) => {
      e.timeouts.connect = v;
    },
    effect: 'timeouts.connect of the back end',
  }),
  annotation({
    name: 'proxy-read-timeout',
    parse: seconds,
    apply: (e, v) => {
      e.timeouts.response = v;
      e.timeouts.idle = v;
    },
    effect:
      'timeouts.response and timeouts.idle: the wait for the response headers and between two chunks of its body',
  }),
  annotation({
    name: 'proxy-send-timeout',
    parse: seconds,
    apply: (e, v) => {
      e.timeouts.send = v;
    },
    effect:
      'timeouts.send of the back end: the longest wait for it to take more of a streamed request body (between two successive writes to it); past it 504',
    differs:
      "ingress-nginx buffers every body first (proxy-request-buffering) and then times the writes; Sluice reads a body of known length up to 16 KiB (64 KiB when retried) whole first, as do plugins that read it, and hands it over in one write, which proxy-read-timeout bounds; it streams larger and chunked bodies, and a slow client's pauses are not counted",
  }),
  annotation({
    name: 'proxy-next-upstream-tries',
    parse: integer(1, 11),
    apply: (e, v) => {
      e.tries = v;
    },
    effect: 'tries in all: N-1 retries of idempotent requests on connection failures and 502/503/504',
    differs:
      'without it no request is retried (ingress-nginx tries 3 times on error and timeout); 0 (unlimited) is refused',
  }),
  annotation({
    name: 'limit-rps',
    parse: integer(1, 1_000_000_000),
    apply: (e, v) => {
      e.rateLimit.second = v;
    },
    effect: 'rate-limiting by client IP: N requests a second, per data-plane process; over it 429',
    differs: 'fixed windows without burst (limit-burst-multiplier is not read); 429, not 503',
  }),
  annotation({
    name: 'limit-rpm',
    parse: integer(1, 1_000_000_000),
    apply: (e, v) => {
      e.rateLimit.minute = v;
    },
    effect: 'rate-limiting by client IP: N requests a minute, per data-plane process; over it 429',
    differs: 'fixed windows without burst; 429, not 503',
  }),
  annotation({
    name: 'enable-cors',
    parse: bool,
    apply: (e, v) => {
      e.cors.enabled = v;
    },
    effect: "true: the cors plugin, with the cors-* annotations (ingress-nginx's defaults otherwise)",
    differs: 'with the origin "*" credentials are not allowed (browsers refuse that pair anyway)',
  }),
  annotation({
    name: 'cors-allow-origin',
    parse: list,
    apply: (e, v) => {
      e.cors.origins = v;
    },
    effect: 'cors origins (comma-separated; default "*")',
  }),
  annotation({
    name: 'cors-allow-methods',
    parse: (v) => list(v).map((m) => m.toUpperCase()),
    apply: (e, v) => {
      e.cors.methods = v;
    },
    effect: 'cors methods',
  }),
  annotation({
    name: 'cors-allow-headers',
    parse: list,
    apply: (e, v) => {
      e.cors.headers = v;
    },
    effect: 'cors allowHeaders',
  }),
  annotation({
    name: 'cors-expose-headers',
    parse: list,
    apply: (e, v) => {
      e.cors.expose = v;
    },
    effect: 'cors exposeHeaders',
  }),
  annotation({
    name: 'cors-allow-credentials',
    parse: bool,
    apply: (e, v) => {
      e.cors.credentials = v;
    },
    effect: 'cors credentials (default true)',
  }),
  annotation({
    name: 'cors-max-age',
    parse: integer(0, 86_400 * 365),
    apply: (e, v) => {
      e.cors.maxAge = v;
    },
    effect: 'cors maxAge, seconds',
    differs:
      'at most 86400, the default too (ingress-nginx: 1728000; browsers keep a preflight answer a day at most)',
  }),
  annotation({
    name: 'upstream-vhost',
    parse: (v) =>
      /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/.test(v.trim().toLowerCase())
        ? v.trim().toLowerCase()
        : { invalid: 'must be a host name' },
    apply: (e, v) => {
      e.upstreamVhost = v;
    },
    effect:
      "the Host header (and TLS server name) the back end gets: the upstream's name, its connections still to the Service's endpoints",
    differs:
      'only for a Service with EndpointSlices (else reported: the name would be dialled); no port in it',
  }),
  annotation({
    name: 'x-forwarded-prefix',
    parse: (v) =>
      v.includes('{{') || /[\r\n]/.test(v) || v === ''
        ? { invalid: 'must be a plain header value (no "{{", no line breaks)' }
        : v,
    apply: (e, v) => {
      e.forwardedPrefix = v;
    },
    effect: 'X-Forwarded-Prefix: the value, on every request to the back end (a request-transformer)',
  }),
  annotation({
    name: 'canary',
    parse: bool,
    apply: (e, v) => {
      e.canary.enabled = v;
    },
    effect:
      "true: the Ingress's paths serve no requests of their own; each is the canary of the same host and path of another Ingress of its namespace, as canary-weight and canary-by-header say",
    differs:
      "only within the namespace; a canary matching no Ingress path is reported; the canary Ingress's other annotations are not read (its paths take the main Ingress's settings, as with ingress-nginx) except use-regex, backend-protocol and the redirects: each is reported",
  }),
  annotation({
    name: 'canary-weight-total',
    parse: integer(1, 1_000_000),
    apply: (e, v) => {
      e.canary.total = v;
    },
    effect: 'the total canary-weight is out of (default 100)',
  }),
  annotation({
    name: 'canary-weight',
    parse: integer(0, 1_000_000),
    apply: (e, v) => {
      e.canary.weight = v;
    },
    effect: "the canary's share of the requests, out of canary-weight-total: the path's weighted backends",
  }),
  annotation({
    name: 'canary-by-header',
    parse: (v) =>
      /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(v.trim()) ? v.trim() : { invalid: 'must be a header name' },
    apply: (e, v) => {
      e.canary.header = v;
    },
    effect:
      'requests with this header "always" go to the canary, "never" to the main backend; others by weight',
  }),
  annotation({
    name: 'canary-by-header-value',
    parse: (v) => (v === '' || /[\r\n]/.test(v) ? { invalid: 'must be a header value' } : v),
    apply: (e, v) => {
      e.canary.headerValue = v;
    },
    effect: 'with canary-by-header: requests whose header has this value go to the canary; others by weight',
  }),
  annotation({
    name: 'canary-by-cookie',
    parse: (v) =>
      /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(v.trim()) ? v.trim() : { invalid: 'must be a cookie name' },
    apply: (e, v) => {
      e.canary.cookie = v;
    },
    effect:
      'requests with this cookie "always" go to the canary, "never" to the main backend; others by weight (canary-by-header first)',
  }),
  annotation({
    name: 'backend-protocol',
    parse: (v) => {
      const p = v.trim().toUpperCase();
      return p === 'HTTP' || p === 'HTTPS' || p === 'GRPC' || p === 'GRPCS'
        ? p
        : { invalid: 'must be HTTP, HTTPS, GRPC or GRPCS' };
    },
    apply: (e, v) => {
      e.backendProtocol = v as IngressEffects['backendProtocol'];
    },
    effect: 'HTTP: HTTP/1.1; GRPC: HTTP/2 in cleartext (h2c); HTTPS, GRPCS: TLS (h2 by ALPN)',
    differs: "over TLS the back end's certificate is verified (ingress-nginx does not by default)",
  }),
  annotation({
    name: 'whitelist-source-range',
    parse: cidrs,
    apply: (e, v) => {
      e.sourceRanges.allow = v;
    },
    effect:
      'only clients in these ranges (comma-separated addresses and CIDRs, IPv4 and IPv6) are served; others get 403 (the ip-restriction plugin)',
    differs:
      'the client address is the socket peer, or behind --trusted-proxies the first untrusted X-Forwarded-For hop (not nginx real_ip settings); 403 is problem+json',
  }),
  annotation({
    name: 'denylist-source-range',
    parse: cidrs,
    apply: (e, v) => {
      e.sourceRanges.deny = v;
    },
    effect:
      'clients in these ranges get 403, even when whitelist-source-range holds them (the ip-restriction plugin)',
    differs: 'the client address as for whitelist-source-range',
  }),
  annotation({
    name: 'proxy-body-size',
    parse: nginxSize,
    apply: (e, v) => {
      e.proxyBodySize = v;
    },
    effect:
      'the largest request body (8m, 512k, bytes; 0: no limit of its own): over it 413, on Content-Length before anything is sent, on a chunked body as it streams (the request-size-limiting plugin)',
    differs:
      "without it, and with 0, the data plane's --max-body-bytes holds (default 10 MiB; ingress-nginx's default is 1m and 0 lifts every limit); a larger value than that changes nothing; 413 is problem+json",
  }),
  annotation({
    name: 'limit-connections',
    parse: integer(1, 1_000_000),
    apply: (e, v) => {
      e.connections = v;
    },
    effect:
      "requests of one client address in progress at once, per data-plane process (nginx's limit_conn: a connection counts while its request is served); over it 429 (the concurrency-limiting plugin)",
    differs: '429 SLC_ERR_RATE_LIMITED as limit-rps, not 503; each Ingress counts its own',
  }),
  annotation({
    name: 'canary-by-header-pattern',
    parse: (v) => {
      if (v === '' || /[\r\n]/.test(v)) return { invalid: 'must be a regular expression' };
      const problem = regexProblem(canaryHeaderRegex(v));
      return problem ? { invalid: problem } : v;
    },
    apply: (e, v) => {
      e.canary.headerPattern = v;
    },
    effect:
      'with canary-by-header: requests whose header matches this regular expression (anywhere in the value, case-sensitive) go to the canary; others by weight; ignored when canary-by-header-value is set',
    differs:
      'JavaScript regular expression syntax, not PCRE; a pattern that could backtrack catastrophically is refused',
  }),
  // Authentication: basic (the basic-auth plugin). Without a plugin that can be made (no
  // auth-secret, a Secret or key missing), the Ingress's paths answer 500 rather than serve
  // unauthenticated (ingress-nginx denies such a location too).
  annotation({
    name: 'auth-type',
    parse: (v) =>
      v.trim() === 'basic'
        ? ('basic' as const)
        : { invalid: v.trim() === 'digest' ? 'is not supported (basic is)' : 'must be "basic"' },
    apply: (e, v) => {
      e.basicAuth.type = v as 'basic';
    },
    failClosed: true,
    effect:
      'basic: HTTP Basic authentication (the basic-auth plugin) against the htpasswd hashes of auth-secret (bcrypt, apr1/MD5, {SHA}); missing or wrong credentials get 401 with WWW-Authenticate: Basic realm=auth-realm',
    differs:
      'digest is refused; the 401 is a problem+json body; if the plugin cannot be made (no auth-secret, the Secret or its key missing the paths answer 500 rather than serve unauthenticated',
  }),
  annotation({
    name: 'auth-secret',
    parse: secretRef,
    apply: (e, v) => {
      e.basicAuth.secret = v.name;
      e.basicAuth.secretNamespace = v.namespace;
    },
    failClosed: true,
    effect:
      'the Secret with the users, by name or as "namespace/name" naming the Ingress\'s own namespace: its key auth an htpasswd file, or with auth-secret-type: auth-map one key per user, its value the hash; watched, so a change is served',
    differs:
      'a Secret of another namespace is refused (the paths answer 500), as ingress-nginx refuses it by default since v1.12 (allow-cross-namespace-resources: false); Sluice has no switch to allow it',
  }),
  annotation({
    name: 'auth-secret-type',
    parse: (v) =>
      v.trim() === 'auth-file' || v.trim() === 'auth-map'
        ? (v.trim() as 'auth-file' | 'auth-map')
        : { invalid: 'must be "auth-file" or "auth-map"' },
    apply: (e, v) => {
      e.basicAuth.secretType = v as 'auth-file' | 'auth-map';
    },
    failClosed: true,
    effect:
      "auth-file (default): the key auth holds an htpasswd file; auth-map: the Secret's keys are the users",
  }),
  annotation({
    name: 'auth-realm',
    parse: (v) =>
      /^[^"\\\r\n]{0,256}$/.test(v)
        ? v
        : { invalid: 'must be at most 256 characters, without quotes or backslashes' },
    apply: (e, v) => {
      e.basicAuth.realm = v;
    },
    effect: 'the realm of the Basic challenge (default empty, as ingress-nginx)',
    differs: 'htpasswd lines of other hash formats (crypt(3) DES, {SSHA}, plain) never authenticate',
  }),
  // External authentication (the ext-auth plugin): a sub-request to auth-url before each request.
  annotation({
    name: 'auth-url',
    parse: (v) => {
      if (/\$[A-Za-z_]/.test(v))
        return {
          invalid:
            "holds an nginx variable: not expanded (a client's Host would choose where the sub-request goes)",
        };
      const url = absoluteUrl(v);
      return url instanceof URL ? url.href : url;
    },
    apply: (e, v) => {
      e.extAuth.url = v;
    },
    effect:
      'each request is first sent (headers, no body, with X-Original-URL, X-Original-Method, X-Auth-Request-Redirect, X-Real-IP) to this URL: 2xx lets it through, 401 and 403 are passed back, any other answer or none within the time allowed (proxy-read-timeout, default 5s) is 500 (the ext-auth plugin)',
    differs:
      'nginx variables ($host …) are not expanded in it; the wait is bounded by proxy-read-timeout or 5s (ingress-nginx: 60s); auth-cache-*, auth-snippet, auth-proxy-set-headers and auth-always-set-cookie are not read',
    failClosed: true,
  }),
  annotation({
    name: 'auth-method',
    parse: (v) =>
      /^[A-Za-z]{1,32}$/.test(v.trim()) ? v.trim().toUpperCase() : { invalid: 'must be an HTTP method' },
    apply: (e, v) => {
      e.extAuth.method = v;
    },
    effect: "the sub-request's method (default GET)",
    failClosed: true,
  }),
  annotation({
    name: 'auth-signin',
    parse: (v) => {
      const vars = (v.match(/\$[A-Za-z_]+/g) ?? []).filter(
        (x) => !['$host', '$scheme', '$request_uri', '$escaped_request_uri'].includes(x),
      );
      if (vars.length)
        return {
          invalid: `holds ${vars.join(', ')}: only $host, $scheme, $request_uri and $escaped_request_uri are expanded`,
        };
      return /^(https?:\/\/|\/)\S*$/.test(v.trim()) && v.trim().length <= 2048
        ? v.trim()
        : { invalid: 'must be an http(s) URL or a path' };
    },
    apply: (e, v) => {
      e.extAuth.signin = v;
    },
    effect:
      'a 401 of auth-url becomes a 302 to this URL, the original URL in its rd parameter (unless the URL has one); $host, $scheme, $request_uri, $escaped_request_uri expanded',
    failClosed: true,
  }),
  annotation({
    name: 'auth-signin-redirect-param',
    parse: (v) =>
      /^[A-Za-z0-9_.~-]{1,64}$/.test(v.trim()) ? v.trim() : { invalid: 'must be a query parameter name' },
    apply: (e, v) => {
      e.extAuth.signinParam = v;
    },
    effect: 'the parameter of auth-signin that carries the original URL (default rd)',
  }),
  annotation({
    name: 'auth-response-headers',
    parse: (v) => {
      const names = list(v);
      return names.length > 0 &&
        names.length <= 32 &&
        names.every((n) => /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(n))
        ? names
        : { invalid: 'must be header names, comma-separated (at most 32)' };
    },
    apply: (e, v) => {
      e.extAuth.responseHeaders = v;
    },
    effect:
      "these headers of auth-url's 2xx answer are set on the request to the back end (removed when the answer lacks them: a client's copy never passes)",
    failClosed: true,
  }),
  annotation({
    name: 'auth-request-redirect',
    parse: (v) =>
      /^[\t\x20-\x7e]{1,2048}$/.test(v) ? v : { invalid: 'must be a header value (printable, at most 2048)' },
    apply: (e, v) => {
      e.extAuth.requestRedirect = v;
    },
    effect: 'X-Auth-Request-Redirect sent to auth-url (default: the request URI)',
  }),
  // Error pages: the proxy's errorPages (handlers/proxy/error-pages.ts).
  annotation({
    name: 'custom-http-errors',
    parse: (v) => {
      const codes = list(v).map((c) => integer(400, 599)(c));
      return codes.length > 0 && codes.length <= 64 && codes.every((c) => typeof c === 'number')
        ? [...new Set(codes as number[])].sort((a, b) => a - b)
        : { invalid: 'must be status codes from 400 to 599, comma-separated' };
    },
    apply: (e, v) => {
      e.customHttpErrors = v;
    },
    effect:
      'an answer of the back end with one of these statuses is replaced by default-backend\'s answer to a request for "/" with the method, the headers and X-Code, X-Format, X-Original-URI, X-Namespace, X-Ingress-Name, X-Service-Name, X-Service-Port, X-Request-ID (the back end\'s body is dropped)',
    differs:
      'only with default-backend (Sluice has no global default backend: without it the annotation is reported and left out); statuses from 400 to 599; the request body is not sent again; not on redirects, app-root or denied paths',
  }),
  annotation({
    name: 'default-backend',
    parse: (v) =>
      /^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$/.test(v.trim())
        ? v.trim()
        : { invalid: "must be the name of a Service in the Ingress's namespace" },
    apply: (e, v) => {
      e.defaultBackend = v;
    },
    effect:
      "a Service of the Ingress's namespace (its first port, its endpoints) that answers custom-http-errors, and every request when the back end has no ready endpoint (X-Code 503)",
    differs:
      'a Service that does not exist is reported and the annotation left out (the paths serve as without it)',
  }),
  // Session affinity: the balance hashes a cookie the data plane sets when absent (balancer.ts).
  annotation({
    name: 'affinity',
    parse: (v) => (v.trim() === 'cookie' ? true : { invalid: 'must be "cookie"' }),
    apply: (e, v) => {
      e.affinity.cookie = v;
    },
    effect:
      'cookie: sticky sessions: a request without the cookie (session-cookie-name) gets one with a new random value, and every request with it goes to the same endpoint of the Service (consistent hashing on the value, the same on every data plane)',
    differs:
      "the endpoint moves only when it leaves (ingress-nginx's affinity-mode persistent; balanced is read as that); not on a canary path split by weight, nor on a Service without EndpointSlices (reported)",
  }),
  annotation({
    name: 'affinity-mode',
    parse: (v) =>
      v.trim() === 'balanced' || v.trim() === 'persistent'
        ? v.trim()
        : { invalid: 'must be "balanced" or "persistent"' },
    apply: () => {},
    effect: 'read, with one meaning: an endpoint keeps its sessions until it leaves (persistent)',
    differs: 'balanced does not move sessions when endpoints are added',
  }),
  annotation({
    name: 'session-cookie-name',
    parse: (v) =>
      /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,256}$/.test(v.trim()) ? v.trim() : { invalid: 'must be a cookie name' },
    apply: (e, v) => {
      e.affinity.name = v;
    },
    effect: 'the affinity cookie (default INGRESSCOOKIE)',
  }),
  annotation({
    name: 'session-cookie-path',
    parse: (v) =>
      /^\/[\x21-\x3a\x3c-\x7e]{0,1023}$/.test(v.trim())
        ? v.trim()
        : { invalid: 'must be a path without ";"' },
    apply: (e, v) => {
      e.affinity.path = v;
    },
    effect: 'the cookie\'s Path (default: the Ingress path; "/" for a regular expression)',
  }),
  annotation({
    name: 'session-cookie-max-age',
    parse: integer(1, 400 * 86_400),
    apply: (e, v) => {
      e.affinity.maxAge = v;
    },
    effect: "the cookie's Max-Age, seconds (default: none, a session cookie)",
  }),
  annotation({
    name: 'session-cookie-expires',
    parse: integer(1, 400 * 86_400),
    apply: (e, v) => {
      e.affinity.expires = v;
    },
    effect: 'the cookie lives this many seconds (when session-cookie-max-age is not set)',
    differs: 'written as Max-Age (the same lifetime for browsers; no clock date in the header)',
  }),
  annotation({
    name: 'session-cookie-samesite',
    parse: (v) => {
      const x = v.trim().toLowerCase();
      return x === 'strict' || x === 'lax' || x === 'none'
        ? ((x[0].toUpperCase() + x.slice(1)) as 'Strict' | 'Lax' | 'None')
        : { invalid: 'must be None, Lax or Strict' };
    },
    apply: (e, v) => {
      e.affinity.sameSite = v as 'Strict' | 'Lax' | 'None';
    },
    effect: "the cookie's SameSite (None implies Secure)",
  }),
  annotation({
    name: 'session-cookie-secure',
    parse: bool,
    apply: (e, v) => {
      e.affinity.secure = v;
    },
    effect: 'true: the cookie is Secure',
  }),
];

const BY_NAME = new Map(ANNOTATIONS.map((a) => [a.name, a]));
/** Table order first (a code after its redirect), then the rest by name. */
const rank = (name: string) => {
  const i = ANNOTATIONS.findIndex((a) => a.name === name);
  return i < 0 ? ANNOTATIONS.length : i;
};

/** A reported annotation: not honoured, a snippet (never executed), or a value that cannot be read. */
export interface AnnotationProblem {
  annotation: string;
  reason: 'AnnotationNotHonoured' | 'SnippetNotExecuted' | 'InvalidAnnotation';
  message: string;
}

/**
 * The effects of an Ingress's annotations, and what of them is reported. `namespace`, the
 * Ingress's, is where the Secrets an annotation names must be.
 */
export function readAnnotations(
  annotations: Readonly<Record<string, string>> | undefined,
  namespace?: string,
): {
  effects: IngressEffects;
  problems: AnnotationProblem[];
} {
  const effects = defaultEffects();
  const problems: AnnotationProblem[] = [];
  const given = Object.entries(annotations ?? {})
    .filter(([k]) => k.startsWith(NGINX_PREFIX))
    .map(([k, v]) => ({ key: k, name: k.slice(NGINX_PREFIX.length), value: v }));
  given.sort((a, b) => rank(a.name) - rank(b.name) || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const { key, name, value } of given) {
    const a = BY_NAME.get(name);
    if (a === undefined) {
      problems.push(
        name.endsWith('-snippet')
          ? {
              annotation: key,
              reason: 'SnippetNotExecuted',
              message: `${key} is never executed: Sluice runs no configuration text from objects`,
            }
          : { annotation: key, reason: 'AnnotationNotHonoured', message: `${key} is not honoured by Sluice` },
      );
      continue;
    }
    const parsed = a.parse(value);
    if (parsed !== null && typeof parsed === 'object' && 'invalid' in parsed) {
      problems.push({
        annotation: key,
        reason: 'InvalidAnnotation',
        message: `${key}: ${JSON.stringify(value)} ${(parsed as Invalid).invalid}; ${a.failClosed ? "the Ingress's paths answer 500" : 'the annotation is left out'}`,
      });
      if (a.failClosed) effects.unreadableAuth.push(name);
      continue;
    }
    a.apply(effects, parsed);
  }
  const secretNs = effects.basicAuth.secretNamespace;
  if (secretNs !== undefined && namespace !== undefined && secretNs !== namespace) {
    const key = `${NGINX_PREFIX}auth-secret`;
    problems.push({
      annotation: key,
      reason: 'InvalidAnnotation',
      message: `${key}: ${JSON.stringify(annotations?.[key])} names a Secret of namespace ${secretNs}, not the Ingress's (${namespace}): cross-namespace Secrets are refused (as ingress-nginx's default allow-cross-namespace-resources: false); the Ingress's paths answer 500`,
    });
    effects.basicAuth.secret = undefined;
    effects.unreadableAuth.push('auth-secret');
  }
  return { effects, problems };
}
