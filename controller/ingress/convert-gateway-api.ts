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
  canariesOf,
  canaryKey,
  canaryMatches,
  type Converted,
  gatewayPlugins,
  ingressesIn,
  type LeftOut,
  metadataOf,
  pathsOf,
  readIngress,
  serviceOf,
  strippedPrefix,
  unjoinedCanaries,
} from './convert.ts';
import { type HeaderMatch, pathProblem } from './index.ts';

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
    // A rewrite-target is written where URLRewrite says it: the prefix-stripping idiom
    // (strippedPrefix) as ReplacePrefixMatch, a target without captures as ReplaceFullPath. One
    // built from other captures is not: that path is left out rather than sent to the back end
    // at another path.
    const target = redirect ? undefined : e.rewriteTarget;
    for (const p of r.denied ? [] : pathsOf(r)) {
      // As the controller serves them (index.ts): a path or pattern it would refuse is not written.
      const bad = p.type === 'RegularExpression' ? pathRegexProblem(p.path) : pathProblem(p.path, p.pathType);
      if (bad) {
        r.leftOut(`${p.field}.path`, `${JSON.stringify(p.path)} ${bad}`);
        continue;
      }
      let rewrite: HTTPRouteFilter | undefined;
      let path = p.path;
      let type: keyof typeof PATH_TYPE = p.type;
      if (target !== undefined) {
        const prefix = p.type === 'RegularExpression' ? strippedPrefix(p.path, target) : undefined;
        if (prefix !== undefined) {
          path = prefix;
          type = 'Prefix';
          rewrite = {
            type: 'URLRewrite',
            urlRewrite: { path: { type: 'ReplacePrefixMatch', replacePrefixMatch: '/' } },
          };
          r.leftOut(
            `${p.field}.path`,
            `${JSON.stringify(p.path)} is written as the PathPrefix ${prefix}, matched case-sensitively (nginx's regular expression location is not)`,
          );
        } else if (!/\$\d/.test(target))
          rewrite = {
            type: 'URLRewrite',
            urlRewrite: { path: { type: 'ReplaceFullPath', replaceFullPath: target } },
          };
        else {
          r.leftOut(
            `${p.field}.path`,
            `rewrite-target ${JSON.stringify(target)} builds the path from regular expression captures, which an HTTPRoute URLRewrite cannot: the path is not written`,
          );
          continue;
        }
      }
      const match = { path: { type: PATH_TYPE[type], value: path } };
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
      const ruleFilters = rewrite ? [rewrite, ...filters] : filters;
      const rule = (name: string, backendRefs: HTTPBackendRef[], header?: HeaderMatch) =>
        rulesOf(p.host).push({
          name,
          matches: [header ? { ...match, headers: [header] } : match],
          ...(ruleFilters.length && { filters: ruleFilters }),
          backendRefs,
        });
      // canary-by-header, then canary-by-cookie: rules in that order, which Gateway API's
      // precedence keeps for matches of as many headers.
      for (const m of c ? canaryMatches(c) : [])
        rule(`${p.name}-${m.suffix}`, [m.to === 'canary' ? c!.service : main], m.header);
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
  unjoinedCanaries(canaries, used);
  // Each Ingress's lines together, in the Ingresses' order (canaries are read before the rest).
  const order = new Map(read.map((r, i) => [r.key, i]));
  leftOut.sort((a, b) => order.get(a.ingress)! - order.get(b.ingress)!);
  return { objects: out, leftOut };
}
