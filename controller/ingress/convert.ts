/**
 * `sluice convert`: Ingress objects (with their ingress-nginx annotations) → GatewayRoutes and
 * GatewayPlugins, or (convert-gateway-api.ts) Gateway API HTTPRoutes. Pure.
 *
 * The annotations mean here what they mean to the controller serving the Ingress: they are read
 * by annotations.ts's table, the plugins they make and the service's timeouts and retries come
 * from index.ts, so a converted Ingress behaves as the Ingress did under Sluice. What the output
 * cannot say is listed (`leftOut`: the Ingress, the field or annotation, why), never dropped
 * silently.
 *
 * Unlike the controller, the conversion sees no Services: a backend is written as a backendRef
 * (a port named rather than numbered cannot be, and is listed), and every Ingress given is
 * converted, whatever its class (the point is to move off another controller).
 */
import { stringify } from 'yaml';
import { API_VERSION } from '../api/common.ts';
import { configField } from '../api/gateway-plugin.ts';
import type { Balance, GatewayRouteSpec, RouteRule, RouteTls } from '../api/gateway-route.ts';
import type { Ingress, IngressBackend, PathType } from '../api/ingress.ts';
import { type IngressEffects, NGINX_PREFIX, readAnnotations } from './annotations.ts';
import {
  type CanaryHeader,
  canaryHeaderMatches,
  canaryHeaderOf,
  type HeaderMatch,
  httpsRedirectOf,
  type IngressProblem,
  missingAuth,
  pathProblem,
  pluginsOf,
  serviceTuning,
} from './index.ts';

/** Something of an Ingress the output does not hold. */
export interface LeftOut {
  /** "namespace/name" (or just the name when the Ingress gives no namespace). */
  ingress: string;
  field: string;
  message: string;
}

export interface Converted {
  objects: Record<string, unknown>[];
  leftOut: LeftOut[];
}

/** An Ingress as both conversions read it: its annotations' effects and plugins, what is already left out. */
export interface ReadIngress {
  ing: Ingress;
  key: string;
  effects: IngressEffects;
  /** GatewayPlugins (name within the namespace, plugin, config). */
  plugins: { name: string; plugin: string; config: Record<string, unknown> }[];
  leftOut: (field: string, message: string) => void;
  /** TLS entries with a Secret and hosts (an entry without hosts is for the rule hosts). */
  tls: RouteTls[];
  ruleHosts: string[];
  /**
   * Authentication the annotations ask for could not be converted (missingAuth): none of the
   * Ingress's paths is written, rather than written unauthenticated.
   */
  denied: boolean;
}

/**
 * A GatewayPlugin's name, which routes reference as a DNS label: <ingress>-<plugin>, an Ingress
 * name's dots as "-", cut to 63 characters (the plugin's name kept whole).
 */
export function pluginName(ingress: string, plugin: string): string {
  const head = ingress
    .replaceAll('.', '-')
    .slice(0, 62 - plugin.length)
    .replace(/-+$/, '');
  return `${head}-${plugin}`;
}

export const annotationField = (name: string) => `metadata.annotations[${NGINX_PREFIX}${name}]`;

/** The Ingresses among the objects (a `kind: List`'s items too). */
export function ingressesIn(objects: readonly unknown[]): Ingress[] {
  return objects.flatMap((o) => {
    const x = o as { kind?: string; apiVersion?: string; items?: unknown[] } | null;
    if (x?.kind === 'List' && Array.isArray(x.items)) return ingressesIn(x.items);
    return x?.kind === 'Ingress' &&
      typeof x.apiVersion === 'string' &&
      x.apiVersion.startsWith('networking.k8s.io/')
      ? [x as unknown as Ingress]
      : [];
  });
}

/** One Ingress read as the controller reads it (annotations.ts, index.ts's plugins). */
export function readIngress(ing: Ingress, out: LeftOut[]): ReadIngress {
  const ns = ing.metadata.namespace;
  const key = ns ? `${ns}/${ing.metadata.name}` : ing.metadata.name;
  const leftOut = (field: string, message: string) => out.push({ ingress: key, field, message });
  const read = readAnnotations(ing.metadata.annotations, ns ?? 'default');
  for (const p of read.problems) leftOut(`metadata.annotations[${p.annotation}]`, p.message);
  const problems: IngressProblem[] = [];
  // pluginsOf names its instances for the controller's model; a GatewayPlugin's name holds no dot.
  const model = pluginsOf(
    { ...ing, metadata: { ...ing.metadata, namespace: ns ?? 'default' } },
    read.effects,
    problems,
  );
  for (const p of problems)
    leftOut(p.annotation ? `metadata.annotations[${p.annotation}]` : p.field, p.message);
  const plugins = model.map((p) => ({
    name: pluginName(ing.metadata.name, p.plugin),
    plugin: p.plugin,
    config: p.config as Record<string, unknown>,
  }));
  const ruleHosts = [
    ...new Set((ing.spec?.rules ?? []).flatMap((r) => (r.host ? [r.host.toLowerCase()] : []))),
  ];
  const tls: RouteTls[] = [];
  (ing.spec?.tls ?? []).forEach((t, i) => {
    const hosts = t.hosts?.length ? t.hosts : ruleHosts;
    if (!t.secretName)
      leftOut(`spec.tls[${i}].secretName`, 'no secretName: Sluice has no default certificate');
    else if (hosts.length === 0) leftOut(`spec.tls[${i}].hosts`, 'no hosts, and no rule names one');
    else tls.push({ hosts, secretName: t.secretName });
  });
  // Error pages live in the proxy's table entry only: neither output has a field for them.
  for (const [name, set] of [
    ['custom-http-errors', read.effects.customHttpErrors],
    ['default-backend', read.effects.defaultBackend],
  ] as const)
    if (set !== undefined)
      leftOut(
        annotationField(name),
        "neither a GatewayRoute nor an HTTPRoute has error pages: the back end's own answers are served",
      );
  const missing = missingAuth(read.effects, plugins);
  for (const a of missing)
    leftOut(
      annotationField(a),
      "its authentication is not converted, so the Ingress's paths are not written",
    );
  return { ing, key, effects: read.effects, plugins, leftOut, tls, ruleHosts, denied: missing.length > 0 };
}

/** A canary Ingress's path (ingress-nginx's canary: "true"), for the main path it joins. */
export interface Canary {
  from: ReadIngress;
  field: string;
  service: { name: string; port: number };
  weight: number;
  total: number;
  header?: CanaryHeader;
  cookie?: string;
}

/** Where a canary applies: the same namespace, host and path (as written) as the main path, as index.ts joins them. */
export const canaryKey = (ns: string | undefined, host: string | undefined, path: string) =>
  `${ns ?? ''}\n${host ?? ''}\n${path}`;

/** The canary paths of the canary Ingresses, by canaryKey (the first Ingress's for each). */
export function canariesOf(read: readonly ReadIngress[]): Map<string, Canary> {
  const out = new Map<string, Canary>();
  for (const r of read) {
    const c = r.effects.canary;
    if (!c.enabled) continue;
    for (const p of pathsOf(r)) {
      const svc = serviceOf(p.backend);
      if (typeof svc === 'string') {
        r.leftOut(`${p.field}.backend`, svc);
        continue;
      }
      const k = canaryKey(r.ing.metadata.namespace, p.host, p.path);
      if (out.has(k)) continue;
      const header = canaryHeaderOf(c);
      out.set(k, {
        from: r,
        field: `${p.field}.path`,
        service: svc,
        weight: c.weight ?? 0,
        total: c.total,
        ...(header && { header }),
        ...(c.cookie !== undefined && { cookie: c.cookie }),
      });
    }
  }
  return out;
}

/** Lists the canaries no main path joined (a canary path matching no Ingress's path). */
export function unjoinedCanaries(canaries: ReadonlyMap<string, Canary>, used: ReadonlySet<string>): void {
  for (const [k, c] of canaries)
    if (!used.has(k)) {
      const [, host, path] = k.split('\n');
      c.from.leftOut(
        c.field,
        `no Ingress of the namespace serves ${host || '(any host)'} ${path}: the canary path is not converted`,
      );
    }
}

/**
 * The rules a canary adds beside its main path, in ingress-nginx's order (canary-by-header, then
 * canary-by-cookie, then the weight): each a header match and which side it goes to. The
 * cookie is matched on the Cookie header (a regular expression: the pair anywhere in it), which
 * both outputs can say; the controller matches the cookie itself.
 */
export function canaryMatches(c: Canary): { suffix: string; to: 'canary' | 'main'; header: HeaderMatch }[] {
  const out: { suffix: string; to: 'canary' | 'main'; header: HeaderMatch }[] = [];
  if (c.header) {
    const by = canaryHeaderMatches(c.header);
    out.push({ suffix: 'canary', to: 'canary', header: by.canary });
    if (by.main) out.push({ suffix: 'main', to: 'main', header: by.main });
  }
  if (c.cookie !== undefined)
    for (const [value, to] of [
      ['always', 'canary'],
      ['never', 'main'],
    ] as const)
      out.push({ suffix: `cookie-${to}`, to, header: cookieMatch(c.cookie, value) });
  return out;
}

/** The Cookie header holding name=value as one of its pairs (no nested quantifiers: the regex rules refuse them). */
export function cookieMatch(name: string, value: string): HeaderMatch {
  const pair = `${name}=${value}`.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return {
    name: 'cookie',
    type: 'RegularExpression',
    value: [pair, `${pair};.*`, `.*; *${pair}`, `.*; *${pair};.*`].join('|'),
  };
}

/**
 * rewrite-target's one case a prefix match says: ingress-nginx's documented "P(/|$)(.*)" with
 * target "/$2" sends P and P/x as / and /x, which is a Prefix match of P with the prefix
 * stripped (GatewayRoute's stripPrefix, HTTPRoute's ReplacePrefixMatch "/"). P a literal path
 * (no regular expression syntax in it). Other rewrites are built from captures no route can.
 */
export function strippedPrefix(path: string, target: string | undefined): string | undefined {
  if (target !== '/$2') return undefined;
  const m = /^(\/[A-Za-z0-9\-_~!&'=:@/%,]*[A-Za-z0-9\-_~!&'=:@%,])\(\/\|\$\)\(\.\*\)$/.exec(path);
  return m?.[1];
}

/** One path of an Ingress (or its default backend) as both conversions walk them. */
export interface IngressPath {
  field: string;
  name: string;
  host?: string;
  path: string;
  type: 'Exact' | 'Prefix' | 'RegularExpression';
  /** As written (its reading: `type`). */
  pathType?: PathType;
  backend?: IngressBackend;
}

export function pathsOf(r: ReadIngress): IngressPath[] {
  const out: IngressPath[] = [];
  (r.ing.spec?.rules ?? []).forEach((rule, i) => {
    (rule.http?.paths ?? []).forEach((p, j) => {
      out.push({
        field: `spec.rules[${i}].http.paths[${j}]`,
        name: `rule-${i}-path-${j}`,
        ...(rule.host && { host: rule.host.toLowerCase() }),
        path: p.path || '/',
        type: p.pathType === 'Exact' ? 'Exact' : r.effects.useRegex ? 'RegularExpression' : 'Prefix',
        ...(p.pathType && { pathType: p.pathType }),
        backend: p.backend,
      });
    });
  });
  if (r.ing.spec?.defaultBackend)
    out.push({
      field: 'spec.defaultBackend',
      name: 'default-backend',
      path: '/',
      type: 'Prefix',
      backend: r.ing.spec.defaultBackend,
    });
  return out;
}

/** The Service and port number of a backend, or why it has none the output can name. */
export function serviceOf(b: IngressBackend | undefined): { name: string; port: number } | string {
  if (b?.service === undefined)
    return b?.resource ? `a ${b.resource.kind} backend is not converted (a Service is)` : 'no backend';
  const port = b.service.port?.number;
  if (port === undefined)
    return `Service ${b.service.name}'s port is named (${b.service.port?.name ?? 'none'}): write its number`;
  return { name: b.service.name, port };
}

export function metadataOf(ing: Ingress, name: string): Record<string, unknown> {
  return { name, ...(ing.metadata.namespace && { namespace: ing.metadata.namespace }) };
}

export function gatewayPlugins(r: ReadIngress): Record<string, unknown>[] {
  return r.plugins.map((p) => ({
    apiVersion: API_VERSION,
    kind: 'GatewayPlugin',
    metadata: metadataOf(r.ing, p.name),
    spec: { plugin: p.plugin, [configField(p.plugin)]: p.config },
  }));
}

/** Ingresses → GatewayRoutes (one per Ingress and backend Service, a GatewayRoute has one) and GatewayPlugins. */
export function convertToGatewayRoutes(objects: readonly unknown[]): Converted {
  const leftOut: LeftOut[] = [];
  const out: Record<string, unknown>[] = [];
  const read = ingressesIn(objects).map((ing) => readIngress(ing, leftOut));
  // A canary Ingress's paths join the main Ingress's GatewayRoutes (as the controller joins them).
  const canaries = canariesOf(read);
  const used = new Set<string>();
  for (const r of read) {
    const ing = r.ing;
    if (r.effects.canary.enabled) continue;
    const e = r.effects;
    if (e.redirect)
      r.leftOut(
        annotationField(
          ing.metadata.annotations?.[`${NGINX_PREFIX}permanent-redirect`]
            ? 'permanent-redirect'
            : 'temporal-redirect',
        ),
        'a GatewayRoute has no redirect answer, so the Ingress is not converted: use --to gateway-api (a RequestRedirect filter)',
      );
    if (e.appRoot !== undefined)
      r.leftOut(annotationField('app-root'), 'a GatewayRoute has no redirect answer: use --to gateway-api');
    if (e.upstreamVhost !== undefined)
      r.leftOut(
        annotationField('upstream-vhost'),
        "a GatewayRoute's backendRef sends the Service's name as the Host",
      );
    if (e.backendProtocol === 'GRPC')
      r.leftOut(
        annotationField('backend-protocol'),
        'a backendRef speaks HTTP/1.1 or TLS: GRPC (h2c) is not written',
      );
    const scheme = e.backendProtocol === 'HTTPS' || e.backendProtocol === 'GRPCS' ? 'https' : undefined;
    const tlsHosts = r.tls.flatMap((t) => t.hosts);
    // One GatewayRoute per Service and port, its rules in the Ingress's order.
    const byService = new Map<string, { service: { name: string; port: number }; rules: RouteRule[] }>();
    const rulesOf = (svc: { name: string; port: number }) => {
      const k = `${svc.name}:${svc.port}`;
      if (!byService.has(k)) byService.set(k, { service: svc, rules: [] });
      return byService.get(k)!.rules;
    };
    if (e.redirect === undefined && !r.denied)
      for (const p of pathsOf(r)) {
        // A GatewayRoute rewrites paths only by stripPrefix: the prefix-stripping idiom of
        // rewrite-target (strippedPrefix) is written so; other rewrites, and regular expression
        // paths, are not (the path would reach the back end at another path, or match otherwise).
        const prefix = p.type === 'RegularExpression' ? strippedPrefix(p.path, e.rewriteTarget) : undefined;
        if (e.rewriteTarget !== undefined && prefix === undefined) {
          r.leftOut(
            `${p.field}.path`,
            `rewrite-target ${JSON.stringify(e.rewriteTarget)} on ${JSON.stringify(p.path)}: a GatewayRoute rewrites only by stripping a prefix ("P(/|$)(.*)" with "/$2"); the path is not written (use --to gateway-api for a target without captures)`,
          );
          continue;
        }
        if (p.type === 'RegularExpression' && prefix === undefined) {
          r.leftOut(
            `${p.field}.path`,
            `${JSON.stringify(p.path)} is a regular expression (use-regex): a GatewayRoute path is a prefix or exact`,
          );
          continue;
        }
        if (prefix !== undefined)
          r.leftOut(
            `${p.field}.path`,
            `${JSON.stringify(p.path)} is written as the prefix ${prefix} with stripPrefix, matched case-sensitively (nginx's regular expression location is not)`,
          );
        const path = prefix ?? p.path;
        const bad = pathProblem(path, prefix !== undefined ? 'Prefix' : p.pathType);
        if (bad) {
          r.leftOut(`${p.field}.path`, `${JSON.stringify(p.path)} ${bad}`);
          continue;
        }
        const svc = serviceOf(p.backend);
        if (typeof svc === 'string') {
          r.leftOut(`${p.field}.backend`, svc);
          continue;
        }
        const redirectHttp = httpsRedirectOf(e, p.host, tlsHosts);
        const rule = (name: string, headers?: HeaderMatch[]): RouteRule => ({
          name,
          paths: [path],
          pathType: prefix !== undefined ? 'Prefix' : (p.type as 'Exact' | 'Prefix'),
          ...(p.host !== undefined && { hosts: [p.host] }),
          ...(headers && { headers }),
          ...(prefix !== undefined && { stripPrefix: true }),
          ...(redirectHttp && { httpsRedirect: true }),
        });
        const k = canaryKey(ing.metadata.namespace, p.host, p.path);
        const c = canaries.get(k);
        if (c === undefined) {
          rulesOf(svc).push(rule(p.name));
          continue;
        }
        used.add(k);
        // canary-by-header, canary-by-cookie: header-matched rules, in the canary's GatewayRoute
        // (its Service) or the main one; they rank before the plain path (a header match).
        for (const m of canaryMatches(c))
          rulesOf(m.to === 'canary' ? c.service : svc).push(rule(`${p.name}-${m.suffix}`, [m.header]));
        if (c.header && c.cookie !== undefined)
          c.from.leftOut(
            annotationField('canary-by-cookie'),
            "with canary-by-header too, the header decides first under ingress-nginx; here, for a request with both, the two rules rank by route precedence (their GatewayRoutes' age, then names)",
          );
        // canary-weight: all or nothing can be written; a share cannot (a GatewayRoute splits by
        // weight only across spec.versions, for the whole service).
        if (c.weight >= c.total) rulesOf(c.service).push(rule(p.name));
        else {
          rulesOf(svc).push(rule(p.name));
          if (c.weight > 0)
            c.from.leftOut(
              annotationField('canary-weight'),
              `${c.weight} of ${c.total} for ${p.host ?? '(any host)'} ${p.path}: a GatewayRoute rule has one backend, so the share is not written (the main Service gets the path's requests; use --to gateway-api for weighted backendRefs)`,
            );
        }
      }
    const names = [...byService.values()].map(({ service }) => service.name);
    [...byService.values()].forEach(({ service, rules }, i) => {
      // The Ingress's name when it has one Service; else the Service's (and port's, when it has two) after it.
      const twice = names.filter((n) => n === service.name).length > 1;
      const name =
        byService.size === 1
          ? ing.metadata.name
          : `${ing.metadata.name}-${service.name}${twice ? `-${service.port}` : ''}`;
      const balance = affinityBalance(r, rules);
      const spec: GatewayRouteSpec = {
        service: {
          name: service.name,
          backendRef: { name: service.name, port: service.port, ...(scheme && { scheme }) },
          ...serviceTuning(e),
          ...(balance && { balance }),
        },
        // The certificates once, on the first (the data plane serves them by SNI for any route).
        ...(i === 0 && r.tls.length && { tls: r.tls }),
        ...(r.plugins.length && { plugins: r.plugins.map((p) => ({ name: p.name })) }),
        routes: rules,
      };
      out.push({ apiVersion: API_VERSION, kind: 'GatewayRoute', metadata: metadataOf(ing, name), spec });
    });
    if (byService.size) out.push(...gatewayPlugins(r));
    else if (r.tls.length)
      r.leftOut('spec.tls', 'no path of the Ingress is converted to hold the certificates');
  }
  unjoinedCanaries(canaries, used);
  // Each Ingress's lines together, in the Ingresses' order (canaries are read before the rest).
  const order = new Map(read.map((r, i) => [r.key, i]));
  leftOut.sort((a, b) => order.get(a.ingress)! - order.get(b.ingress)!);
  return { objects: out, leftOut };
}

/**
 * affinity: cookie as the GatewayRoute's balance (consistent-hash on the cookie, setCookie). The
 * controller gives each Ingress path its own cookie Path; a GatewayRoute has one balance for its
 * rules: their path when they share one, else "/" (listed) unless session-cookie-path says.
 */
function affinityBalance(r: ReadIngress, rules: RouteRule[]): Balance | undefined {
  const a = r.effects.affinity;
  if (!a.cookie) return undefined;
  const paths = [...new Set(rules.flatMap((x) => x.paths ?? []))];
  if (a.path === undefined && paths.length > 1)
    r.leftOut(
      annotationField('session-cookie-path'),
      `the cookie's Path is each Ingress path's (${paths.join(', ')}); a GatewayRoute has one: "/" is written`,
    );
  const maxAge = a.maxAge ?? a.expires;
  return {
    policy: 'consistent-hash',
    hashOn: {
      cookie: a.name ?? 'INGRESSCOOKIE',
      setCookie: {
        path: a.path ?? (paths.length === 1 ? paths[0] : '/'),
        ...(maxAge !== undefined && { maxAge: hms(maxAge) }),
        ...(a.sameSite && { sameSite: a.sameSite }),
        ...(a.secure && { secure: true }),
      },
    },
  };
}

/** Whole seconds as a GatewayRoute duration ("48h", "1h30m5s": each number at most 5 digits). */
function hms(seconds: number): string {
  const parts = [
    [Math.floor(seconds / 3600), 'h'],
    [Math.floor((seconds % 3600) / 60), 'm'],
    [seconds % 60, 's'],
  ] as const;
  return parts.flatMap(([n, unit]) => (n ? [`${n}${unit}`] : [])).join('') || '0s';
}

/**
 * YAML 1.1 quoting: kubectl reads YAML 1.1, where an unquoted yes, on or no is a boolean (a
 * header value "yes" must stay a string); no anchors for shared objects, no line folding.
 */
const YAML_OPTIONS = { version: '1.1', aliasDuplicateObjects: false, lineWidth: 0 } as const;

/** The output as `sluice convert` prints it: the objects as YAML documents, one line per thing left out. */
export function renderConverted(c: Converted): { yaml: string; leftOut: string[] } {
  return {
    yaml: c.objects.map((o) => stringify(o, YAML_OPTIONS)).join('---\n'),
    leftOut: c.leftOut.map((l) => `Ingress ${l.ingress}: ${l.field}: ${l.message}`),
  };
}
