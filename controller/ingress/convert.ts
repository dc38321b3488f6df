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
  for (const ing of ingressesIn(objects)) {
    const r = readIngress(ing, leftOut);
    if (r.effects.canary.enabled) {
      r.leftOut(
        annotationField('canary'),
        'a canary Ingress has no GatewayRoute form here: use --to gateway-api (weighted backendRefs, a header match), or spec.versions',
      );
      continue;
    }
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
    // A GatewayRoute rewrites paths only by stripPrefix: served without the rewrite, the paths
    // would reach the back end at other paths than the Ingress sends them to, so none is written.
    const unrewritable = e.redirect === undefined && e.rewriteTarget !== undefined;
    if (unrewritable)
      r.leftOut(
        annotationField('rewrite-target'),
        `${JSON.stringify(e.rewriteTarget)}: a GatewayRoute has no such path rewrite; the Ingress's paths are not written`,
      );
    if (e.redirect === undefined && !unrewritable && !r.denied)
      for (const p of pathsOf(r)) {
        if (p.type === 'RegularExpression') {
          r.leftOut(
            `${p.field}.path`,
            `${JSON.stringify(p.path)} is a regular expression (use-regex): a GatewayRoute path is a prefix or exact`,
          );
          continue;
        }
        const bad = pathProblem(p.path, p.pathType);
        if (bad) {
          r.leftOut(`${p.field}.path`, `${JSON.stringify(p.path)} ${bad}`);
          continue;
        }
        const svc = serviceOf(p.backend);
        if (typeof svc === 'string') {
          r.leftOut(`${p.field}.backend`, svc);
          continue;
        }
        const k = `${svc.name}:${svc.port}`;
        if (!byService.has(k)) byService.set(k, { service: svc, rules: [] });
        const redirectHttp = httpsRedirectOf(e, p.host, tlsHosts);
        byService.get(k)!.rules.push({
          name: p.name,
          paths: [p.path],
          pathType: p.type,
          ...(p.host !== undefined && { hosts: [p.host] }),
          ...(redirectHttp && { httpsRedirect: true }),
        });
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
