/**
 * `sluice convert --to gateway-api`: Ingresses → Gateway API HTTPRoutes attached to one Gateway
 * (parentRefs), and the GatewayPlugins their annotations make, applied by ExtensionRef filters
 * (cors, rate-limiting: no HTTPRoute field says them). Pure; the Ingresses are read as
 * convert.ts reads them (annotations.ts's table, index.ts's plugins).
 *
 * An HTTPRoute's hostnames hold for all of its rules, so an Ingress becomes one HTTPRoute per
 * host (rules without a host and the default backend: one without hostnames). Annotations with
 * an HTTPRoute form are written in it: permanent-/temporal-redirect and app-root as
 * RequestRedirect filters, upstream-vhost as a URLRewrite hostname, x-forwarded-prefix as a
 * RequestHeaderModifier; a canary Ingress's paths join the main paths (same namespace, host and
 * path, as index.ts joins them) as weighted backendRefs and header-matched rules. What has none in the standard channel is listed: the certificates
 * (they belong on the Gateway's listeners), the redirect to https (a RequestRedirect on the
 * plain-HTTP listener), the proxy timeouts (HTTPRoute's bound the whole request), retries
 * (experimental channel) and backend-protocol (the Service port's appProtocol, BackendTLSPolicy).
 */
import { pathRegexProblem } from '../../dataplane/config/path-regex.ts';
import { GROUP } from '../api/common.ts';
import {
  GATEWAY_API_GROUP,
  type HTTPBackendRef,
  type HTTPRouteFilter,
  type HTTPRouteRule,
} from '../api/gateway-api.ts';
import {
  annotationField,
  type Converted,
  gatewayPlugins,
  ingressesIn,
  type LeftOut,
  metadataOf,
  pathsOf,
  type ReadIngress,
  readIngress,
  serviceOf,
} from './convert.ts';
import {
  type CanaryHeader,
  canaryHeaderMatches,
  canaryHeaderOf,
  type HeaderMatch,
  pathProblem,
} from './index.ts';

export interface GatewayRef {
  namespace?: string;
  name: string;
}

/** spec.rules' maxItems in the HTTPRoute CRD. */
const MAX_RULES = 16;

const PATH_TYPE = { Exact: 'Exact', Prefix: 'PathPrefix', RegularExpression: 'RegularExpression' } as const;

export function convertToHTTPRoutes(objects: readonly unknown[], gateway: GatewayRef): Converted {
  const leftOut: LeftOut[] = [];
  const out: Record<string, unknown>[] = [];
  const read = ingressesIn(objects).map((ing) => readIngress(ing, leftOut));
  const canaries = canariesOf(read);
  const used = new Set<string>();
  for (const r of read) {
    if (r.effects.canary.enabled) continue;
    const ing = r.ing;
    const e = r.effects;
    const tlsHosts = r.tls.flatMap((t) => t.hosts);
    if (r.tls.length)
      r.leftOut(
        'spec.tls',
        `certificates belong on the Gateway's HTTPS listener: ${r.tls.map((t) => t.secretName).join(', ')}`,
      );
    if (e.forceSslRedirect)
      r.leftOut(
        annotationField('force-ssl-redirect'),
        'an HTTPRoute on the plain-HTTP listener with a RequestRedirect (scheme https) says it',
      );
    else if (e.sslRedirect && tlsHosts.length)
      r.leftOut(
        annotationField('ssl-redirect'),
        'the redirect to https (ssl-redirect is true by default): an HTTPRoute on the plain-HTTP listener with a RequestRedirect (scheme https) says it',
      );
    for (const [name, set] of [
      ['proxy-connect-timeout', e.timeouts.connect],
      ['proxy-read-timeout', e.timeouts.response],
      ['proxy-send-timeout', e.timeouts.send],
    ] as const)
      if (set)
        r.leftOut(
          annotationField(name),
          "an HTTPRoute's timeouts bound the whole request; this one is not written",
        );
    if (e.tries !== undefined)
      r.leftOut(
        annotationField('proxy-next-upstream-tries'),
        'HTTPRoute retry is in the experimental channel only',
      );
    if (e.affinity.cookie)
      r.leftOut(
        annotationField('affinity'),
        "HTTPRoute's sessionPersistence is in the experimental channel only: requests are not sticky",
      );
    if (e.backendProtocol !== 'HTTP')
      r.leftOut(
        annotationField('backend-protocol'),
        `${e.backendProtocol}: set the Service port's appProtocol (and a BackendTLSPolicy for TLS)`,
      );

    const plugins = r.plugins.filter((p) => p.plugin !== 'request-transformer');
    const filters: HTTPRouteFilter[] = [
      ...(e.forwardedPrefix !== undefined
        ? [
            {
              type: 'RequestHeaderModifier',
              requestHeaderModifier: { set: [{ name: 'X-Forwarded-Prefix', value: e.forwardedPrefix }] },
            },
          ]
        : []),
      ...(e.upstreamVhost !== undefined
        ? [{ type: 'URLRewrite', urlRewrite: { hostname: e.upstreamVhost } }]
        : []),
      ...plugins.map((p) => ({
        type: 'ExtensionRef',
        extensionRef: { group: GROUP, kind: 'GatewayPlugin', name: p.name },
      })),
    ];
    const redirect: HTTPRouteFilter | undefined = e.redirect && {
      type: 'RequestRedirect',
      requestRedirect: {
        scheme: e.redirect.url.protocol === 'https:' ? 'https' : 'http',
        hostname: e.redirect.url.hostname,
        ...(e.redirect.url.port !== '' && { port: Number(e.redirect.url.port) }),
        path: { type: 'ReplaceFullPath', replaceFullPath: e.redirect.url.pathname || '/' },
        statusCode: e.redirect.statusCode,
      },
    };

    // One HTTPRoute per host ("" for none), its rules in the Ingress's order.
    const byHost = new Map<string, HTTPRouteRule[]>();
    const rulesOf = (host: string | undefined) => {
      const k = host ?? '';
      if (!byHost.has(k)) byHost.set(k, []);
      return byHost.get(k)!;
    };
    // The rewrite of a rewrite-target is built from the path's regular expression captures (or
    // replaces the whole path): URLRewrite has neither, so none of the paths is written rather
    // than sending their requests to the back end at other paths.
    const unrewritable = !redirect && e.rewriteTarget !== undefined;
    if (unrewritable)
      r.leftOut(
        annotationField('rewrite-target'),
        `${JSON.stringify(e.rewriteTarget)}: an HTTPRoute URLRewrite cannot build a path from regular expression captures; the Ingress's paths are not written`,
      );
    for (const p of unrewritable || r.denied ? [] : pathsOf(r)) {
      // As the controller serves them (index.ts): a path or pattern it would refuse is not written.
      const bad = p.type === 'RegularExpression' ? pathRegexProblem(p.path) : pathProblem(p.path, p.pathType);
      if (bad) {
        r.leftOut(`${p.field}.path`, `${JSON.stringify(p.path)} ${bad}`);
        continue;
      }
      const match = { path: { type: PATH_TYPE[p.type], value: p.path } };
      if (redirect) {
        rulesOf(p.host).push({ name: p.name, matches: [match], filters: [redirect] });
        continue;
      }
      const svc = serviceOf(p.backend);
      if (typeof svc === 'string') {
        r.leftOut(`${p.field}.backend`, svc);
        continue;
      }
      const main = { name: svc.name, port: svc.port };
      const k = canaryKey(ing.metadata.namespace, p.host, p.path);
      const c = canaries.get(k);
      if (c) used.add(k);
      const rule = (name: string, backendRefs: HTTPBackendRef[], header?: HeaderMatch) =>
        rulesOf(p.host).push({
          name,
          matches: [header ? { ...match, headers: [header] } : match],
          ...(filters.length && { filters }),
          backendRefs,
        });
      if (c?.header) {
        const by = canaryHeaderMatches(c.header);
        rule(`${p.name}-canary`, [c.service], by.canary);
        if (by.main) rule(`${p.name}-main`, [main], by.main);
      }
      // canary-weight: the path's requests spread over both.
      const w = c?.weight ?? 0;
      if (c === undefined || w <= 0) rule(p.name, [main]);
      else if (w >= c.total) rule(p.name, [c.service]);
      else
        rule(p.name, [
          { ...main, weight: c.total - w },
          { ...c.service, weight: w },
        ]);
    }
    if (e.appRoot !== undefined)
      for (const h of r.ruleHosts.length ? r.ruleHosts : [undefined])
        rulesOf(h).unshift({
          name: 'app-root',
          matches: [{ path: { type: 'Exact', value: '/' } }],
          filters: [
            {
              type: 'RequestRedirect',
              requestRedirect: {
                path: { type: 'ReplaceFullPath', replaceFullPath: e.appRoot },
                statusCode: 302,
              },
            },
          ],
        });
    const parentRefs = [{ ...(gateway.namespace && { namespace: gateway.namespace }), name: gateway.name }];
    for (const [host, rules] of byHost) {
      const base =
        byHost.size === 1
          ? ing.metadata.name
          : `${ing.metadata.name}-${host === '' ? 'any-host' : host.replace(/^\*\./, 'wildcard.').replaceAll('.', '-')}`;
      // An HTTPRoute holds 16 rules at most: more go to <name>-2, <name>-3, …
      for (let i = 0; i < rules.length; i += MAX_RULES)
        out.push({
          apiVersion: `${GATEWAY_API_GROUP}/v1`,
          kind: 'HTTPRoute',
          metadata: metadataOf(ing, i === 0 ? base : `${base}-${i / MAX_RULES + 1}`),
          spec: {
            parentRefs,
            ...(host !== '' && { hostnames: [host] }),
            rules: rules.slice(i, i + MAX_RULES),
          },
        });
    }
    if (byHost.size && plugins.length) out.push(...gatewayPlugins({ ...r, plugins }));
  }
  for (const [k, c] of canaries)
    if (!used.has(k)) {
      const [, host, path] = k.split('\n');
      c.from.leftOut(
        c.field,
        `no Ingress of the namespace serves ${host || '(any host)'} ${path}: the canary path is not converted`,
      );
    }
  // Each Ingress's lines together, in the Ingresses' order (canaries are read before the rest).
  const order = new Map(read.map((r, i) => [r.key, i]));
  leftOut.sort((a, b) => order.get(a.ingress)! - order.get(b.ingress)!);
  return { objects: out, leftOut };
}

/** A canary Ingress's path (ingress-nginx's canary: "true"), for the main path it joins. */
interface Canary {
  from: ReadIngress;
  field: string;
  service: HTTPBackendRef;
  weight: number;
  total: number;
  header?: CanaryHeader;
}

/** Where a canary applies: the same namespace, host and path (as written) as the main path, as index.ts joins them. */
const canaryKey = (ns: string | undefined, host: string | undefined, path: string) =>
  `${ns ?? ''}\n${host ?? ''}\n${path}`;

/** The canary paths of the canary Ingresses, by canaryKey (the first Ingress's for each). */
function canariesOf(read: readonly ReadIngress[]): Map<string, Canary> {
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
        service: { name: svc.name, port: svc.port },
        weight: c.weight ?? 0,
        total: c.total,
        ...(header && { header }),
      });
    }
  }
  return out;
}
