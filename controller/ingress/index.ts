/**
 * networking.k8s.io/v1 Ingresses → ModelRoutes (the model GatewayRoutes become: one compile
 * serves both, with the same precedence and conflict rules). Pure.
 *
 * Which Ingresses: classes.ts. Each path of each rule becomes one ModelRoute (its backend is its
 * service), matched on the rule's host (exact, or "*.suffix" for exactly one label, as the
 * Ingress spec says and the data plane matches routes off Gateway listeners) and its path:
 *   - Exact: the path exactly; Prefix: element-wise, "/foo" matches /foo and /foo/bar, not
 *     /foobar, and a trailing "/" is ignored (the Ingress spec's table);
 *   - ImplementationSpecific: as ingress-nginx reads it without use-regex, a prefix; Sluice's is
 *     element-wise (nginx's `location /foo` would also take /foobar);
 *   - with use-regex, Prefix and ImplementationSpecific paths are regular expressions
 *     (dataplane/config/path-regex.ts: case-insensitive, anchored at the start, as nginx's
 *     `location ~*`), ranked after Exact paths and before Prefix ones, the longer first;
 *   - rewrite-target (which implies use-regex) is the path's rewrite: the whole path, built from
 *     the regex's captures when it refers to them (route-table ReplaceFullPathWithCaptures).
 * spec.defaultBackend is a Prefix "/" route without host: it ranks after every rule (shortest
 * path, no host), so it takes what no rule matches. spec.tls certificates are served on the data
 * plane's TLS port (--https-port) by SNI, like a GatewayRoute's spec.tls. Backends are Services
 * resolved through their EndpointSlices (validate/service-backend.ts, the Gateway API's one
 * definition), the port by number or name.
 *
 * A canary Ingress (ingress-nginx's canary: "true") serves nothing of its own: each of its paths
 * joins the path of another Ingress with the same namespace, host and path, as the second of
 * weighted backends (canary-weight) and as a route with a header match (canary-by-header: its
 * value, or "always", to the canary; without a value, "never" to the main backend), which ranks
 * before the plain path by precedence rule 4, and as two routes with a cookie match
 * (canary-by-cookie: "always" to the canary, "never" to the main backend; rule 5c).
 *
 * Authentication (auth-type: basic, auth-url: the basic-auth and ext-auth plugins, their Secrets
 * resolved as a GatewayPlugin's) fails closed: asked for and not made, the Ingress's paths answer
 * 500 and run no plugin (missingAuth). affinity: cookie is each path's balance, consistent
 * hashing on a cookie the data plane sets when absent.
 *
 * What cannot be served is reported on the Ingress (Warning Events: status/ingress-writer.ts)
 * and left out alone, the rest of the Ingress keeps serving: a path the data plane cannot match
 * (a regular expression), a backend that does not resolve (the path answers 500
 * SLC_ERR_BACKEND_INVALID rather than falling through to another route), a TLS entry whose Secret
 * does not resolve, an annotation not honoured or not readable (annotations.ts).
 */
import { normalizeRoutePath, ROUTE_PATH_PATTERN } from '../../dataplane/config/path-grammar.ts';
import {
  CAPTURE_REF,
  captureGroups,
  captureRefsProblem,
  pathRegexProblem,
} from '../../dataplane/config/path-regex.ts';
import type { Balance, Route } from '../../dataplane/config/route-table.ts';
import type { Retries, RouteRule, RouteTls, Timeouts } from '../api/gateway-route.ts';
import type { Ingress, IngressBackend, PathType } from '../api/ingress.ts';
import { INVALID_BACKEND, NO_BACKEND } from '../gateway-api/redirects.ts';
import { keyOf, type ObjectRef, type ResourceSet } from '../source/resource-set.ts';
import { withSortedKeys } from '../../dataplane/config/canonical-json.ts';
import { pluginManifest } from '../../dataplane/config/catalog.ts';
import { resolvedSecretField } from '../../dataplane/config/manifest.ts';
import { pluginConfigProblems } from '../validate/gateway-plugin.ts';
import { resolveSecretRefs } from '../validate/secret-refs.ts';
import type { ModelPlugin, ModelRoute } from '../validate/model.ts';
import { resolveServiceBackend, type ServiceBackend } from '../validate/service-backend.ts';
import { type ModelCertificate, resolveTlsRefs } from '../validate/tls-refs.ts';
import { canaryHeaderRegex, type IngressEffects, NGINX_PREFIX, readAnnotations } from './annotations.ts';
import { DEFAULT_INGRESS_CLASS, ingressesOf } from './classes.ts';

/** One thing about an Ingress that is not served as written: a Warning Event. */
export interface IngressProblem {
  /** Where: "spec.rules[0].http.paths[1].backend.service", "metadata.annotations[...]". */
  field: string;
  reason: string;
  message: string;
  /** The annotation it is about (the metric's label). */
  annotation?: string;
}

export interface IngressReport {
  generation: number;
  problems: IngressProblem[];
}

export interface IngressResult {
  routes: ModelRoute[];
  /** Plugin instances the annotations make (ip-restriction, cors, rate-limiting, request-transformer, basic-auth, ext-auth, …), by "namespace/name". */
  plugins: Map<string, ModelPlugin>;
  /** Sluice's Ingresses by "namespace/name", in key order. */
  ingresses: Map<string, IngressReport>;
}

export interface IngressOptions {
  /** --ingress-class (default sluice). */
  className?: string;
}

/** A canary Ingress's path: its backend and how requests choose it (annotations.ts canary-*). */
interface Canary {
  /** The canary Ingress, "namespace/name". */
  key: string;
  backend: ServiceBackend;
  weight: number;
  total: number;
  header?: CanaryHeader;
  /** canary-by-cookie: the cookie whose value "always" takes the canary, "never" the main backend. */
  cookie?: string;
}

function canaryOfPath(key: string, backend: ServiceBackend, e: IngressEffects['canary']): Canary {
  const { cookie, total, weight = 0 } = e;
  const header = canaryHeaderOf(e);
  return { key, backend, weight, total, ...(cookie !== undefined && { cookie }), ...(header && { header }) };
}

/** canary-by-header with its value or its pattern (a value wins, as ingress-nginx reads them). */
export interface CanaryHeader {
  name: string;
  value?: string;
  pattern?: string;
}

/** The canary's header, when canary-by-header names one (also `sluice convert`'s). */
export function canaryHeaderOf(e: IngressEffects['canary']): CanaryHeader | undefined {
  if (e.header === undefined) return undefined;
  if (e.headerValue !== undefined) return { name: e.header, value: e.headerValue };
  return { name: e.header, ...(e.headerPattern !== undefined && { pattern: e.headerPattern }) };
}

/** Where a canary applies: the same namespace, host and path (as written) as the main path. */
const canaryKey = (ns: string, host: string | undefined, path: string) => `${ns}\n${host ?? ''}\n${path}`;

export function translateIngresses(set: ResourceSet, opts: IngressOptions = {}): IngressResult {
  const out: IngressResult = { routes: [], plugins: new Map(), ingresses: new Map() };
  const ours = ingressesOf(set, opts.className ?? DEFAULT_INGRESS_CLASS);
  // Canaries first: the main Ingresses' paths take theirs (one per path: the first by name).
  const canaries = new Map<string, Canary>();
  const reports = new Map<string, IngressProblem[]>();
  for (const [key, ing] of ours) {
    const r = translateIngress(set, key, ing, undefined);
    if (r.canaries === undefined) continue;
    for (const [k, c] of r.canaries) if (!canaries.has(k)) canaries.set(k, c);
    reports.set(key, r.problems);
  }
  const used = new Set<string>();
  const canaryOf = (k: string) => {
    const c = canaries.get(k);
    if (c) used.add(k);
    return c;
  };
  for (const [key, ing] of ours) {
    if (reports.has(key)) continue;
    const { routes, plugins, problems } = translateIngress(set, key, ing, canaryOf);
    out.routes.push(...routes);
    for (const p of plugins) out.plugins.set(`${p.ref.namespace}/${p.ref.name}`, p);
    reports.set(key, problems);
  }
  for (const [k, c] of canaries)
    if (!used.has(k)) {
      const [, host, path] = k.split('\n');
      reports.get(c.key)!.push({
        field: 'spec.rules',
        reason: 'CanaryWithoutMain',
        message: `no Ingress of the namespace serves ${host || '(any host)'} ${path}: the canary path serves nothing`,
      });
    }
  for (const [key, ing] of ours)
    out.ingresses.set(key, { generation: ing.metadata.generation ?? 0, problems: reports.get(key)! });
  return out;
}

/**
 * One Ingress's routes; a canary Ingress's (canary: "true") paths instead, for the main ones
 * (`canaryOf` absent: the canary pass).
 */
function translateIngress(
  set: ResourceSet,
  key: string,
  ing: Ingress,
  canaryOf: ((k: string) => Canary | undefined) | undefined,
): {
  routes: ModelRoute[];
  plugins: ModelPlugin[];
  problems: IngressProblem[];
  canaries?: Map<string, Canary>;
} {
  const ns = ing.metadata.namespace!;
  const name = ing.metadata.name;
  const ref: ObjectRef = { kind: 'Ingress', namespace: ns, name };
  const source = { kind: 'Ingress', namespace: ns, name, generation: ing.metadata.generation ?? 0 };
  const created = ing.metadata.creationTimestamp ? Date.parse(ing.metadata.creationTimestamp) : Number.NaN;
  const spec = ing.spec ?? {};
  const problems: IngressProblem[] = [];
  const problem = (field: string, reason: string, message: string) =>
    problems.push({ field, reason, message });

  const read = readAnnotations(ing.metadata.annotations, ns);
  const effects = read.effects;
  if (canaryOf === undefined && !effects.canary.enabled) return { routes: [], plugins: [], problems: [] };
  for (const p of read.problems) problems.push({ field: `metadata.annotations[${p.annotation}]`, ...p });
  // The canary pass reads only what makes the canary paths; the rest is reported, not resolved.
  const canaryPass = canaryOf === undefined;
  if (canaryPass) problems.push(...unreadOnCanary(ing.metadata.annotations, read.problems));
  const plugins = canaryPass
    ? []
    : withSecrets(
        set,
        ref,
        pluginsOf(ing, effects, problems, (secret) => {
          const s = set.secrets.get(`${ns}/${secret}`);
          return s && [...new Set([...Object.keys(s.data ?? {}), ...Object.keys(s.stringData ?? {})])];
        }),
        problems,
      );
  // Authentication asked for and not made: its paths answer 500 rather than serve unauthenticated.
  const denied = missingAuth(effects, plugins);
  const errorBackend = canaryPass ? undefined : errorBackendOf(set, ns, effects, problems);

  const ruleHosts = [...new Set((spec.rules ?? []).flatMap((r) => (r.host ? [r.host.toLowerCase()] : [])))];
  const certificates = certificatesOf(set, ing, ruleHosts, problem);
  const tlsHosts = certificates.flatMap((c) => c.hosts);

  const routes: ModelRoute[] = [];
  const canaries = new Map<string, Canary>();
  const add = (
    field: string,
    ruleName: string,
    path: string,
    pathType: 'Exact' | 'Prefix' | 'RegularExpression',
    host: string | undefined,
    answer: { backend: ServiceBackend } | { entry: Route['handler'] },
    withPlugins: boolean,
    more: {
      weighted?: Canary;
      headers?: HeaderMatch[];
      cookies?: { name: string; value: string }[];
      rewrite?: Route['rewrite'];
    } = {},
  ) => {
    const backend: ServiceBackend = 'backend' in answer ? answer.backend : NO_BACKEND;
    const entry = 'entry' in answer ? answer.entry : undefined;
    const c = more.weighted;
    const all = c ? [backend, c.backend] : [backend];
    const redirectHttp = httpsRedirectOf(effects, host, tlsHosts);
    const rule: RouteRule = {
      name: ruleName,
      paths: [path],
      ...(pathType !== 'RegularExpression' && { pathType }),
      ...(host !== undefined && { hosts: [host] }),
      ...(more.headers && { headers: more.headers }),
      ...(redirectHttp && { httpsRedirect: true }),
      // A denied path (its authentication not made) answers 500 and runs no plugin.
      ...(withPlugins &&
        plugins.length &&
        !denied.length && { plugins: plugins.map((p) => ({ name: p.ref.name })) }),
    };
    // custom-http-errors / default-backend: on a path to a Service (not a redirect nor a denial).
    const pages = entry === undefined ? errorBackend : undefined;
    if (pages) all.push(pages);
    const protocols = new Map(all.flatMap((b) => (b.protocol ? [[b.url, b.protocol] as const] : [])));
    const balance =
      entry || c ? undefined : affinityOf(backend, pathType === 'RegularExpression' ? '/' : path);
    routes.push({
      ref,
      source,
      createdMs: Number.isNaN(created) ? undefined : created,
      spec: {
        service: {
          name: backend.service,
          url: backend.url,
          ...serviceTuning(effects),
        },
        routes: [rule],
      },
      upstreamUrl: backend.url,
      ...(balance && { balance }),
      ...(pathType === 'RegularExpression' && { regex: true as const }),
      ...(more.rewrite && entry === undefined && { rewrite: more.rewrite }),
      ...(more.cookies && { cookies: more.cookies }),
      ...(pages && {
        errorPages: {
          service: pages.service,
          url: pages.url,
          statuses: effects.customHttpErrors ?? [],
          // As ingress-nginx's custom error location sets them; in key order (the table's).
          headers: {
            'X-Ingress-Name': ing.metadata.name,
            'X-Namespace': ns,
            'X-Service-Name': backend.service,
            'X-Service-Port': new URL(backend.url).port || (backend.url.startsWith('https:') ? '443' : '80'),
          },
        },
      }),
      field,
      handlers: [entry ? { kind: entry.type, config: undefined, urls: [], entry } : null],
      // On one route of the Ingress (compile collects them by Secret; once is enough).
      certificates: routes.length === 0 ? certificates : [],
      ...(all.some((b) => b.endpoints) && {
        endpoints: new Map(all.flatMap((b) => (b.endpoints ? [[b.url, b.endpoints] as const] : []))),
      }),
      ...(protocols.size && { protocols }),
      // A canary by weight: the proxy spreads the path's requests over the two (resolve-upstreams.ts).
      ...(c && {
        backends: [
          { service: backend.service, url: backend.url, weight: c.total - c.weight },
          { service: c.backend.service, url: c.backend.url, weight: c.weight },
        ],
      }),
    });
  };

  const scheme =
    effects.backendProtocol === 'HTTPS' || effects.backendProtocol === 'GRPCS' ? 'https' : 'http';
  const answerOf = (
    b: IngressBackend | undefined,
    at: string,
  ): { backend: ServiceBackend } | { entry: Route['handler'] } => {
    if (effects.redirect) return { entry: redirectEntry(effects.redirect) };
    if (denied.length) return { entry: INVALID_BACKEND };
    if (b?.service === undefined) {
      const kind = b?.resource ? `${b.resource.apiGroup ?? ''}/${b.resource.kind}` : 'an empty';
      problem(
        `${at}.resource`,
        'BackendNotServed',
        `${kind} backend is not served (a Service is): its requests get 500`,
      );
      return { entry: INVALID_BACKEND };
    }
    const resolved = resolveServiceBackend(set, ns, b.service.name, b.service.port ?? {}, scheme);
    if (typeof resolved === 'string') {
      problem(`${at}.service`, 'BackendNotFound', `${resolved}: its requests get 500`);
      return { entry: INVALID_BACKEND };
    }
    // backend-protocol GRPC: HTTP/2 with prior knowledge, as an h2c Service port is spoken to.
    const backend = effects.backendProtocol === 'GRPC' ? { ...resolved, protocol: 'h2c' as const } : resolved;
    return { backend: withVhost(backend, `${at}.service`) };
  };
  // upstream-vhost: the upstream's name is the Host header and TLS server name; its connections
  // go to the Service's endpoints, so without them the name would be dialled: refused then.
  const withVhost = (b: ServiceBackend, at: string): ServiceBackend => {
    const vhost = effects.upstreamVhost;
    if (vhost === undefined) return b;
    if (b.endpoints === undefined) {
      const annotation = `${NGINX_PREFIX}upstream-vhost`;
      problems.push({
        field: `metadata.annotations[${annotation}]`,
        reason: 'InvalidAnnotation',
        annotation,
        message: `${at}: Service ${b.service} has no EndpointSlices, so the name ${vhost} would be dialled; the annotation is left out`,
      });
      return b;
    }
    const url = new URL(b.url);
    url.hostname = vhost;
    return { ...b, url: url.origin };
  };

  // affinity: cookie: the path's balance hashes the cookie the data plane sets when absent; it
  // needs the Service's endpoints (a name is one address to the proxy), reported once if not.
  let affinityReported = false;
  const affinityOf = (b: ServiceBackend, path: string): Balance | undefined => {
    const a = effects.affinity;
    if (!a.cookie) return undefined;
    if (b.endpoints === undefined) {
      if (!affinityReported) {
        const annotation = `${NGINX_PREFIX}affinity`;
        problems.push({
          field: `metadata.annotations[${annotation}]`,
          reason: 'AnnotationNotHonoured',
          annotation,
          message: `${annotation}: Service ${b.service} has no EndpointSlices, so there is no endpoint to stick to; requests are not sticky`,
        });
        affinityReported = true;
      }
      return undefined;
    }
    const maxAgeS = a.maxAge ?? a.expires;
    return {
      policy: 'consistent-hash',
      hashOn: {
        cookie: a.name ?? 'INGRESSCOOKIE',
        set: {
          path: a.path ?? path,
          ...(maxAgeS !== undefined && { maxAgeS }),
          ...(a.sameSite && { sameSite: a.sameSite }),
          ...(a.secure && { secure: true }),
        },
      },
    };
  };

  // rewrite-target: the path's rewrite (one with captures when the target refers to any); null
  // when it refers to a group the path lacks: reported, and the path left out rather than served
  // with the back end sent the unrewritten path.
  const rewriteOf = (path: string, type: string, at: string): Route['rewrite'] | null => {
    const target = effects.rewriteTarget;
    if (target === undefined) return undefined;
    const wrong = captureRefsProblem(target, type === 'RegularExpression' ? captureGroups(path) : 0);
    if (wrong === undefined)
      return {
        path: {
          type: CAPTURE_REF.test(target) ? 'ReplaceFullPathWithCaptures' : 'ReplaceFullPath',
          value: target,
        },
      };
    const annotation = `${NGINX_PREFIX}rewrite-target`;
    problems.push({
      field: `metadata.annotations[${annotation}]`,
      reason: 'InvalidAnnotation',
      annotation,
      message: `${annotation}: ${JSON.stringify(target)} ${wrong} (${at}.path ${JSON.stringify(path)}${type === 'Exact' ? ', an Exact path' : ''}): the path is left out`,
    });
    return null;
  };

  (spec.rules ?? []).forEach((rule, i) => {
    const host = rule.host?.toLowerCase();
    (rule.http?.paths ?? []).forEach((p, j) => {
      const at = `spec.rules[${i}].http.paths[${j}]`;
      const path = p.path || '/';
      const type = p.pathType === 'Exact' ? 'Exact' : effects.useRegex ? 'RegularExpression' : 'Prefix';
      const bad = type === 'RegularExpression' ? pathRegexProblem(path) : pathProblem(path, p.pathType);
      if (bad) {
        problem(`${at}.path`, 'PathNotServed', `${JSON.stringify(path)} ${bad}: the path is left out`);
        return;
      }
      const answer = answerOf(p.backend, `${at}.backend`);
      const k = canaryKey(ns, host, path);
      if (canaryOf === undefined) {
        if ('backend' in answer && !canaries.has(k))
          canaries.set(k, canaryOfPath(key, answer.backend, effects.canary));
        return;
      }
      const rewrite = rewriteOf(path, type, at);
      if (rewrite === null) return;
      const c = 'backend' in answer ? canaryOf(k) : undefined;
      const name = `rule-${i}-path-${j}`;
      if (c === undefined || c.weight <= 0)
        add(`${at}.path`, name, path, type, host, answer, true, { rewrite });
      else if (c.weight >= c.total)
        add(`${at}.path`, name, path, type, host, { backend: c.backend }, true, { rewrite });
      else add(`${at}.path`, name, path, type, host, answer, true, { weighted: c, rewrite });
      // By cookie: "always" to the canary, "never" to the main backend; its routes rank after the
      // header's (fewer header matches) and before the plain path (a cookie match), as
      // ingress-nginx takes canary-by-header, then canary-by-cookie, then canary-weight.
      if (c?.cookie !== undefined) {
        add(`${at}.path`, `${name}-cookie-canary`, path, type, host, { backend: c.backend }, true, {
          cookies: [{ name: c.cookie, value: 'always' }],
          rewrite,
        });
        add(`${at}.path`, `${name}-cookie-main`, path, type, host, answer, true, {
          cookies: [{ name: c.cookie, value: 'never' }],
          rewrite,
        });
      }
      if (c?.header === undefined) return;
      const by = canaryHeaderMatches(c.header);
      add(`${at}.path`, `${name}-canary`, path, type, host, { backend: c.backend }, true, {
        headers: [by.canary],
        rewrite,
      });
      if (by.main)
        add(`${at}.path`, `${name}-main`, path, type, host, answer, true, { headers: [by.main], rewrite });
    });
  });
  if (canaryOf === undefined) return { routes: [], plugins: [], problems, canaries };
  if (spec.defaultBackend)
    add(
      'spec.defaultBackend',
      'default-backend',
      '/',
      'Prefix',
      undefined,
      answerOf(spec.defaultBackend, 'spec.defaultBackend'),
      true,
    );
  if (effects.appRoot !== undefined) {
    const entry: Route['handler'] = {
      path: { type: 'ReplaceFullPath', value: effects.appRoot },
      statusCode: 302,
      type: 'redirect',
    };
    const hosts = ruleHosts.length ? ruleHosts : [undefined];
    for (const [k, h] of hosts.entries())
      add(
        `metadata.annotations[${NGINX_PREFIX}app-root]`,
        `app-root-${k}`,
        '/',
        'Exact',
        h,
        { entry },
        false,
      );
  }
  return { routes, plugins, problems };
}

/** The annotations the canary pass reads of a canary Ingress, besides canary-*: its paths' answers. */
const READ_ON_CANARY = new Set(['use-regex', 'backend-protocol', 'permanent-redirect', 'temporal-redirect']);

/**
 * A canary Ingress's other annotations, each reported: its paths take the main Ingress's
 * settings (plugins, timeouts, error pages, …), as ingress-nginx ignores a canary's non-canary
 * annotations. Those already reported (an invalid value) are not reported twice.
 */
function unreadOnCanary(
  annotations: Readonly<Record<string, string>> | undefined,
  reported: readonly { annotation: string }[],
): IngressProblem[] {
  const done = new Set(reported.map((p) => p.annotation));
  return Object.keys(annotations ?? {})
    .filter((k) => k.startsWith(NGINX_PREFIX) && !done.has(k))
    .filter((k) => {
      const name = k.slice(NGINX_PREFIX.length);
      return name !== 'canary' && !name.startsWith('canary-') && !READ_ON_CANARY.has(name);
    })
    .sort()
    .map((annotation) => ({
      field: `metadata.annotations[${annotation}]`,
      reason: 'AnnotationNotHonoured',
      annotation,
      message: `${annotation} is not read on a canary Ingress: its paths take the main Ingress's settings, as with ingress-nginx`,
    }));
}

/**
 * default-backend (with custom-http-errors): the Service answering in place of the listed
 * statuses and when a path's Service has no endpoint, on its first port as ingress-nginx takes
 * it. Without default-backend, custom-http-errors is reported and left out (ingress-nginx sends
 * them to its global default backend, which Sluice has not); a Service that does not resolve is
 * reported and the annotation left out: the paths serve as without it.
 */
function errorBackendOf(
  set: ResourceSet,
  ns: string,
  e: IngressEffects,
  problems: IngressProblem[],
): ServiceBackend | undefined {
  const report = (name: string, reason: string, message: string) => {
    const annotation = `${NGINX_PREFIX}${name}`;
    problems.push({ field: `metadata.annotations[${annotation}]`, reason, annotation, message });
  };
  if (e.defaultBackend === undefined) {
    if (e.customHttpErrors)
      report(
        'custom-http-errors',
        'AnnotationNotHonoured',
        `${NGINX_PREFIX}custom-http-errors needs ${NGINX_PREFIX}default-backend (Sluice has no global default backend): the annotation is left out`,
      );
    return undefined;
  }
  const first = set.services?.get(keyOf(ns, e.defaultBackend))?.spec?.ports?.[0]?.port;
  const resolved =
    set.services !== null && first === undefined
      ? `Service ${ns}/${e.defaultBackend} not found or without ports`
      : resolveServiceBackend(set, ns, e.defaultBackend, { number: first ?? 80 });
  if (typeof resolved === 'string') {
    report(
      'default-backend',
      'BackendNotFound',
      `${NGINX_PREFIX}default-backend: ${resolved}: the annotation is left out`,
    );
    return undefined;
  }
  return resolved;
}

/**
 * The plugins' secretKeyRefs resolved as a GatewayPlugin's are (validate/secret-refs.ts: the
 * value beside each, as the plugin's manifest says), from Secrets of the Ingress's namespace; a
 * plugin with one that does not resolve is reported and left out.
 */
function withSecrets(
  set: ResourceSet,
  ref: ObjectRef,
  plugins: ModelPlugin[],
  problems: IngressProblem[],
): ModelPlugin[] {
  return plugins.flatMap((p) => {
    const as = resolvedSecretField(pluginManifest(p.plugin));
    const wrong = resolveSecretRefs(ref, p.config as Record<string, unknown>, set.secrets, as, p.field);
    for (const d of wrong)
      problems.push({
        field: p.plugin === 'basic-auth' ? `metadata.annotations[${NGINX_PREFIX}auth-secret]` : d.field,
        ...(p.plugin === 'basic-auth' && { annotation: `${NGINX_PREFIX}auth-secret` }),
        reason: d.reason,
        message: `${d.message}: ${p.plugin} is left out${p.plugin.endsWith('-auth') ? ', the paths answer 500' : ''}`,
      });
    // Keys sorted once more (the resolved values added), as validate does a GatewayPlugin's.
    return wrong.length === 0 ? [{ ...p, config: withSortedKeys(p.config) }] : [];
  });
}

/** Why a path cannot be matched by the data plane, or undefined. */
export function pathProblem(path: string, type: PathType | undefined): string | undefined {
  if (!new RegExp(ROUTE_PATH_PATTERN).test(path))
    return type === 'ImplementationSpecific' || type === undefined
      ? 'holds characters a path cannot (a regular expression needs nginx.ingress.kubernetes.io/use-regex: "true")'
      : 'holds characters a path cannot';
  const n = normalizeRoutePath(path);
  return typeof n === 'string' ? undefined : n.error;
}

/** The GatewayRoute service's timeouts and retries the annotations ask for (also `sluice convert`'s). */
export function serviceTuning(e: IngressEffects): { timeouts?: Timeouts; retries?: Retries } {
  return {
    ...(Object.keys(e.timeouts).length && { timeouts: { ...e.timeouts } }),
    ...(e.tries !== undefined && e.tries > 1 && { retries: { attempts: e.tries - 1 } }),
  };
}

/** A header match of a rule: the value exactly, or a pattern it matches whole. */
export interface HeaderMatch {
  name: string;
  value: string;
  type?: 'RegularExpression';
}

/**
 * canary-by-header's matches: the value, the pattern (found anywhere in the value) or "always" to
 * the canary; with neither value nor pattern, "never" to the main backend (ingress-nginx's
 * reading; also `sluice convert`'s).
 */
export function canaryHeaderMatches(h: CanaryHeader): { canary: HeaderMatch; main?: HeaderMatch } {
  const name = h.name.toLowerCase();
  if (h.value === undefined && h.pattern !== undefined)
    return { canary: { name, type: 'RegularExpression', value: canaryHeaderRegex(h.pattern) } };
  return {
    canary: { name, value: h.value ?? 'always' },
    ...(h.value === undefined && { main: { name, value: 'never' } }),
  };
}

/** ssl-redirect / force-ssl-redirect: whether plain-HTTP requests for the host get 308 to https. */
export function httpsRedirectOf(
  e: IngressEffects,
  host: string | undefined,
  tlsHosts: readonly string[],
): boolean {
  return (
    e.forceSslRedirect || (e.sslRedirect && host !== undefined && tlsHosts.some((t) => hostCovers(t, host)))
  );
}

/** Whether a TLS host (exact, or "*.suffix": one label) covers a rule's host. */
export function hostCovers(tls: string, host: string): boolean {
  if (tls === host) return true;
  if (!tls.startsWith('*.') || host.startsWith('*.')) return false;
  const rest = host.slice(0, host.length - tls.length + 1);
  return host.endsWith(tls.slice(1)) && rest.length > 0 && !rest.includes('.');
}

/**
 * spec.tls resolved as a GatewayRoute's is (validate/tls-refs.ts): a Secret of type
 * kubernetes.io/tls covering each host. An entry without hosts is for the Ingress's rule hosts;
 * one without secretName is not served (ingress-nginx would use its default certificate; Sluice
 * has none).
 */
function certificatesOf(
  set: ResourceSet,
  ing: Ingress,
  ruleHosts: string[],
  problem: (field: string, reason: string, message: string) => void,
): ModelCertificate[] {
  const ref: ObjectRef = { kind: 'Ingress', namespace: ing.metadata.namespace!, name: ing.metadata.name };
  const out: ModelCertificate[] = [];
  (ing.spec?.tls ?? []).forEach((t, index) => {
    const at = `spec.tls[${index}]`;
    if (!t.secretName) {
      problem(
        `${at}.secretName`,
        'TLSNotServed',
        'no secretName: Sluice has no default certificate to serve',
      );
      return;
    }
    const hosts = t.hosts?.length ? t.hosts : ruleHosts;
    if (hosts.length === 0) {
      problem(`${at}.hosts`, 'TLSNotServed', 'no hosts, and no rule names one');
      return;
    }
    const entry: RouteTls = { hosts, secretName: t.secretName };
    const resolved = resolveTlsRefs(ref, [entry], set.secrets);
    for (const d of resolved.diagnostics) problem(d.field.replace('spec.tls[0]', at), d.reason, d.message);
    for (const c of resolved.certificates) out.push({ ...c, index });
  });
  return out;
}

/** The redirect entry of permanent-redirect / temporal-redirect: the URL's scheme, host, port and path. */
export function redirectEntry(r: NonNullable<IngressEffects['redirect']>): Route['handler'] {
  const scheme = r.url.protocol === 'https:' ? 'https' : 'http';
  return {
    hostname: r.url.hostname,
    path: { type: 'ReplaceFullPath', value: r.url.pathname || '/' },
    ...(r.url.port !== '' && { port: Number(r.url.port) }),
    scheme,
    statusCode: r.statusCode,
    type: 'redirect',
  };
}

/**
 * The plugin instances an Ingress's annotations make (ip-restriction, request-size-limiting, cors,
 * rate-limiting, concurrency-limiting, a request-transformer for X-Forwarded-Prefix, basic-auth,
 * ext-auth), named ingress.<name>.<plugin> (a
 * GatewayPlugin name holds no dot, so none shares it). A config the plugin refuses (a cors origin
 * it cannot read) is reported naming the annotations, and that plugin left out.
 */
export function pluginsOf(
  ing: Ingress,
  e: IngressEffects,
  problems: IngressProblem[],
  /** The keys of a Secret of the Ingress's namespace (an auth-map's users); absent: not seen (convert). */
  secretKeys?: (name: string) => string[] | undefined,
): ModelPlugin[] {
  const ns = ing.metadata.namespace!;
  const name = ing.metadata.name;
  const out: ModelPlugin[] = [];
  const make = (
    plugin:
      | 'cors'
      | 'rate-limiting'
      | 'request-transformer'
      | 'ip-restriction'
      | 'request-size-limiting'
      | 'concurrency-limiting'
      | 'basic-auth'
      | 'ext-auth',
    config: Record<string, unknown>,
    annotations: string,
  ) => {
    const wrong = pluginConfigProblems(plugin, config);
    if (wrong.length) {
      problems.push({
        field: 'metadata.annotations',
        reason: 'InvalidAnnotation',
        annotation: `${NGINX_PREFIX}${annotations.split(',')[0]}`,
        message: `${annotations}: ${wrong.map((e) => (e.field ? `${e.field}: ${e.message}` : e.message)).join('; ')}; ${plugin} is left out`,
      });
      return;
    }
    out.push({
      ref: { kind: 'Ingress', namespace: ns, name: `ingress.${name}.${plugin}` },
      source: { kind: 'Ingress', namespace: ns, name, generation: ing.metadata.generation ?? 0 },
      plugin,
      field: 'metadata.annotations',
      config: sortedKeys(config),
    });
  };
  // Before the others: a refused address is answered first (its phase, access, comes before
  // authentication and rate limits anyway).
  if (e.sourceRanges.allow !== undefined || e.sourceRanges.deny !== undefined)
    make('ip-restriction', { ...e.sourceRanges }, 'whitelist-source-range, denylist-source-range');
  if (e.proxyBodySize) make('request-size-limiting', { maxBytes: e.proxyBodySize }, 'proxy-body-size');
  if (e.cors.enabled) {
    const origins = e.cors.origins ?? ['*'];
    const any = origins.includes('*');
    make(
      'cors',
      {
        origins,
        methods: e.cors.methods ?? ['GET', 'PUT', 'POST', 'DELETE', 'PATCH', 'OPTIONS'],
        allowHeaders: e.cors.headers ?? [
          'DNT',
          'Keep-Alive',
          'User-Agent',
          'X-Requested-With',
          'If-Modified-Since',
          'Cache-Control',
          'Content-Type',
          'Range',
          'Authorization',
        ],
        ...(e.cors.expose?.length && { exposeHeaders: e.cors.expose }),
        // ingress-nginx allows credentials by default; with the origin "*" browsers refuse them.
        credentials: e.cors.credentials ?? !any,
        // The cors plugin's most (browsers hold a preflight answer two hours to a day anyway).
        maxAge: Math.min(e.cors.maxAge ?? 1_728_000, 86_400),
      },
      'enable-cors, cors-*',
    );
  }
  if (e.rateLimit.second !== undefined || e.rateLimit.minute !== undefined)
    make('rate-limiting', { ...e.rateLimit, limitBy: 'ip' }, 'limit-rps, limit-rpm');
  if (e.connections !== undefined)
    make('concurrency-limiting', { perClient: e.connections }, 'limit-connections');
  if (e.forwardedPrefix !== undefined) {
    // Set, as nginx's proxy_set_header: replaced when the client sent one, added when not.
    const headers = [`X-Forwarded-Prefix:${e.forwardedPrefix}`];
    make('request-transformer', { add: { headers }, replace: { headers } }, 'x-forwarded-prefix');
  }
  if (e.extAuth.url !== undefined) {
    const x = e.extAuth;
    make(
      'ext-auth',
      {
        url: x.url,
        ...(x.method && x.method !== 'GET' && { method: x.method }),
        ...(x.signin !== undefined && { signin: x.signin }),
        ...(x.signinParam !== undefined && { signinRedirectParam: x.signinParam }),
        ...(x.responseHeaders && { responseHeaders: x.responseHeaders }),
        ...(x.requestRedirect !== undefined && { requestRedirect: x.requestRedirect }),
        // ingress-nginx's auth location waits as long as the proxy does: proxy-read-timeout
        // (at most the plugin's 60s).
        ...(e.timeouts.response !== undefined && {
          timeout: `${Math.min(Number.parseInt(e.timeouts.response, 10), 60)}s`,
        }),
      },
      'auth-url, auth-*',
    );
  }
  const basic = basicAuthConfig(e, secretKeys);
  if (typeof basic === 'string')
    problems.push({
      field: `metadata.annotations[${NGINX_PREFIX}auth-type]`,
      reason: 'InvalidAnnotation',
      annotation: `${NGINX_PREFIX}auth-type`,
      message: basic,
    });
  else if (basic) make('basic-auth', basic, 'auth-type, auth-secret, auth-secret-type, auth-realm');
  return out;
}

/**
 * auth-type: basic's plugin config: the Secret's key "auth" (auth-file), or each of its keys as a
 * user (auth-map); why not, or undefined when no basic authentication is asked for.
 */
function basicAuthConfig(
  e: IngressEffects,
  secretKeys: ((name: string) => string[] | undefined) | undefined,
): Record<string, unknown> | string | undefined {
  const { type, secret, secretType, realm } = e.basicAuth;
  if (type === undefined) return undefined;
  if (secret === undefined)
    return `${NGINX_PREFIX}auth-type: basic needs ${NGINX_PREFIX}auth-secret: the paths answer 500`;
  const realmOf = { realm: realm ?? '' };
  if (secretType === 'auth-file')
    return { ...realmOf, credentials: [{ secretKeyRef: { name: secret, key: 'auth' } }] };
  const users = secretKeys?.(secret);
  if (users === undefined)
    return secretKeys === undefined
      ? `${NGINX_PREFIX}auth-secret-type: auth-map: the users are the keys of Secret ${secret}, which are not seen here`
      : `${NGINX_PREFIX}auth-secret: Secret ${secret} (auth-map) not found: the paths answer 500`;
  if (users.length === 0)
    return `${NGINX_PREFIX}auth-secret: Secret ${secret} (auth-map) has no keys: the paths answer 500`;
  return {
    ...realmOf,
    credentials: users.sort().map((user) => ({ secretKeyRef: { name: secret, key: user }, user })),
  };
}

/**
 * The authentication an Ingress's annotations ask for whose plugin is not made (reported
 * already): its paths are not served as written, they answer 500 (ingress-nginx denies them too).
 */
export function missingAuth(e: IngressEffects, plugins: readonly { plugin: string }[]): string[] {
  const has = (p: string) => plugins.some((x) => x.plugin === p);
  return [
    ...e.unreadableAuth,
    ...(e.basicAuth.type !== undefined && !has('basic-auth') ? ['auth-type'] : []),
    ...(e.extAuth.url !== undefined && !has('ext-auth') ? ['auth-url'] : []),
  ];
}

function sortedKeys(o: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(o).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}
