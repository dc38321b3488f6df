/**
 * Golden tests of `sluice convert` (controller/ingress/convert.ts, convert-gateway-api.ts): every
 * test/golden/convert/<case>.in.yaml (Ingresses, with other objects skipped) is converted both
 * ways, and what the command prints must equal the files: <case>.out.yaml (GatewayRoutes and
 * GatewayPlugins) with <case>.left-out.txt (stderr's list), and <case>.gateway-api.out.yaml with
 * <case>.gateway-api.left-out.txt (--to gateway-api, --gateway gateways/public). The controller's
 * Ingress golden inputs, converted, compile to the routes their Ingresses compile to. That the
 * outputs apply is test/k8s/convert.test.ts's. To add a case: write the .in.yaml (a comment at
 * the top says what), run `make golden`, review, commit.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { convertToHTTPRoutes } from '../../controller/ingress/convert-gateway-api.ts';
import {
  convertToGatewayRoutes,
  cookieMatch,
  pluginName,
  renderConverted,
  strippedPrefix,
} from '../../controller/ingress/convert.ts';
import { canonicalJson } from '../../dataplane/config/canonical-json.ts';
import type { Route } from '../../dataplane/config/route-table.ts';
import type { Resource } from '../../controller/api/index.ts';
import { build } from '../../controller/build.ts';
import { DEFAULT_INGRESS_CLASS, ingressesOf } from '../../controller/ingress/classes.ts';
import { resourceSetFrom } from '../../controller/source/resource-set.ts';
import { expectGolden } from '../helpers/golden.ts';

const DIR = join(import.meta.dirname, 'convert');
const cases = readdirSync(DIR)
  .filter((f) => f.endsWith('.in.yaml'))
  .map((f) => f.slice(0, -'.in.yaml'.length))
  .sort();

const objects = (name: string) =>
  parseAllDocuments(readFileSync(join(DIR, `${name}.in.yaml`), 'utf8')).map((d) => d.toJS());
const lines = (l: string[]) => l.map((x) => `${x}\n`).join('');

describe('convert golden files', () => {
  it.each(cases)('%s → GatewayRoute', (name) => {
    const out = renderConverted(convertToGatewayRoutes(objects(name)));
    expectGolden(out.yaml, join(DIR, `${name}.out.yaml`));
    expectGolden(lines(out.leftOut), join(DIR, `${name}.left-out.txt`));
  });

  it.each(cases)('%s → HTTPRoute', (name) => {
    const out = renderConverted(convertToHTTPRoutes(objects(name), { namespace: 'gateways', name: 'public' }));
    expectGolden(out.yaml, join(DIR, `${name}.gateway-api.out.yaml`));
    expectGolden(lines(out.leftOut), join(DIR, `${name}.gateway-api.left-out.txt`));
  });
});

describe('convert', () => {
  it('reads the annotations as the controller does: an invalid value is left out naming it and the value', () => {
    const ing = {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'Ingress',
      metadata: { name: 'a', namespace: 'n', annotations: { 'nginx.ingress.kubernetes.io/limit-rps': 'fast' } },
      spec: { defaultBackend: { service: { name: 's', port: { number: 80 } } } },
    };
    const c = convertToGatewayRoutes([ing]);
    expect(c.leftOut).toEqual([
      {
        ingress: 'n/a',
        field: 'metadata.annotations[nginx.ingress.kubernetes.io/limit-rps]',
        message: expect.stringContaining('"fast"'),
      },
    ]);
    expect(c.objects.map((o) => o.kind)).toEqual(['GatewayRoute']);
  });

  it("writes rewrite-target's prefix-stripping idiom as a stripped prefix, and no path whose rewrite needs captures", () => {
    const ing = (target: string, paths: { path: string; pathType: string }[]) => ({
      apiVersion: 'networking.k8s.io/v1',
      kind: 'Ingress',
      metadata: { name: 'rw', namespace: 'n', annotations: { 'nginx.ingress.kubernetes.io/rewrite-target': target } },
      spec: {
        rules: [
          {
            host: 'rw.example.test',
            http: { paths: paths.map((p) => ({ ...p, backend: { service: { name: 's', port: { number: 80 } } } })) },
          },
        ],
      },
    });
    const idiom = ing('/$2', [
      { path: '/a(/|$)(.*)', pathType: 'ImplementationSpecific' },
      { path: '/health', pathType: 'Exact' },
      { path: '/v1.0(/|$)(.*)', pathType: 'ImplementationSpecific' },
    ]);
    const gr = convertToGatewayRoutes([idiom]);
    expect((gr.objects[0] as { spec: { routes: unknown[] } }).spec.routes).toEqual([
      { name: 'rule-0-path-0', paths: ['/a'], pathType: 'Prefix', hosts: ['rw.example.test'], stripPrefix: true },
    ]);
    const hr = convertToHTTPRoutes([idiom], { name: 'gw' });
    expect((hr.objects[0] as { spec: { rules: unknown[] } }).spec.rules).toEqual([
      {
        name: 'rule-0-path-0',
        matches: [{ path: { type: 'PathPrefix', value: '/a' } }],
        filters: [{ type: 'URLRewrite', urlRewrite: { path: { type: 'ReplacePrefixMatch', replacePrefixMatch: '/' } } }],
        backendRefs: [{ name: 's', port: 80 }],
      },
    ]);
    // Listed in both: the prefix's case-sensitive match; /health (an Exact path cannot take $2);
    // /v1.0 ("." is regular expression syntax: not a literal prefix).
    for (const c of [gr, hr])
      expect(c.leftOut.map((l) => l.field)).toEqual([
        'spec.rules[0].http.paths[0].path',
        'spec.rules[0].http.paths[1].path',
        'spec.rules[0].http.paths[2].path',
      ]);
    // A target without captures: HTTPRoute's ReplaceFullPath; a GatewayRoute cannot (listed, not written).
    const fixed = ing('/index.html', [{ path: '/b', pathType: 'Prefix' }]);
    expect(convertToGatewayRoutes([fixed]).objects).toEqual([]);
    const rules = (convertToHTTPRoutes([fixed], { name: 'gw' }).objects[0] as { spec: { rules: { filters: unknown }[] } })
      .spec.rules;
    expect(rules[0].filters).toEqual([
      { type: 'URLRewrite', urlRewrite: { path: { type: 'ReplaceFullPath', replaceFullPath: '/index.html' } } },
    ]);
  });

  it('reads the items of a List, and nothing but Ingresses', () => {
    const ing = {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'Ingress',
      metadata: { name: 'a' },
      spec: { defaultBackend: { service: { name: 's', port: { number: 80 } } } },
    };
    const c = convertToGatewayRoutes([{ kind: 'List', items: [ing, { apiVersion: 'v1', kind: 'Service' }] }, null]);
    expect(c).toEqual({
      objects: [
        {
          apiVersion: 'sluice.dev/v1alpha1',
          kind: 'GatewayRoute',
          metadata: { name: 'a' },
          spec: {
            service: { name: 's', backendRef: { name: 's', port: 80 } },
            routes: [{ name: 'default-backend', paths: ['/'], pathType: 'Prefix' }],
          },
        },
      ],
      leftOut: [],
    });
  });

  it("splits an HTTPRoute at 16 rules (the CRD's most): <name>-2 takes the rest", () => {
    const paths = Array.from({ length: 17 }, (_, i) => ({
      path: `/p${i}`,
      pathType: 'Prefix',
      backend: { service: { name: 's', port: { number: 80 } } },
    }));
    const ing = {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'Ingress',
      metadata: { name: 'many' },
      spec: { rules: [{ host: 'a.example.test', http: { paths } }] },
    };
    const c = convertToHTTPRoutes([ing], { name: 'gw' });
    const routes = c.objects as { metadata: { name: string }; spec: { rules: { name: string }[] } }[];
    expect(routes.map((r) => [r.metadata.name, r.spec.rules.length])).toEqual([
      ['many', 16],
      ['many-2', 1],
    ]);
    expect(routes[1].spec.rules[0].name).toBe('rule-0-path-16');
    expect(c.leftOut).toEqual([]);
  });

  it('names GatewayPlugins as routes can reference them: a DNS label of at most 63 characters', () => {
    expect(pluginName('web', 'cors')).toBe('web-cors');
    expect(pluginName('shop.example.com', 'rate-limiting')).toBe('shop-example-com-rate-limiting');
    const long = pluginName(`${'a'.repeat(47)}.${'b'.repeat(30)}`, 'request-transformer');
    expect(long).toBe(`${'a'.repeat(43)}-request-transformer`);
    expect(long).toHaveLength(63);
  });

  // The controller's golden inputs (Ingresses of class sluice, with their Services and
  // EndpointSlices): what convert writes compiles to routes the Ingresses compile to (the same
  // match, https redirect, answer and plugins), and where nothing is left out, to all of them.
  // Two of the controller's matches convert writes in another form that takes the same requests
  // (but for case, listed): a canary cookie as a Cookie header match (cookieMatch), and
  // rewrite-target's prefix-stripping idiom as a prefix (strippedPrefix; the rewrite as a strip).
  const asConverted = (r: Route): string => {
    const { cookies, ...m } = r.match;
    const stripped =
      m.path.type === 'RegularExpression' && r.rewrite?.path?.value === '/$2'
        ? strippedPrefix(m.path.value, '/$2')
        : undefined;
    return canonicalJson({
      ...m,
      ...(stripped !== undefined && { path: { type: 'Prefix', value: stripped } }),
      ...(cookies && { headers: [...(m.headers ?? []), ...cookies.map((c) => cookieMatch(c.name, c.value))] }),
    });
  };
  const INGRESS = join(import.meta.dirname, 'ingress');
  it.each(readdirSync(INGRESS).filter((f) => f.endsWith('.in.yaml')))(
    'the GatewayRoutes of %s compile to routes the Ingresses compile to',
    (file) => {
      const all = parseAllDocuments(readFileSync(join(INGRESS, file), 'utf8'))
        .map((d) => d.toJS() as Resource | null)
        .filter((o): o is Resource => o !== null);
      // The Ingresses the controller serves (by class, IngressClass or annotation), as it picks them.
      const ours = [...ingressesOf(resourceSetFrom(all, { withServices: true }), DEFAULT_INGRESS_CLASS).values()];
      const c = convertToGatewayRoutes(ours);
      const others = all.filter((o) => o.kind !== 'Ingress');
      const before = build(resourceSetFrom(all, { withServices: true }));
      const after = build(resourceSetFrom([...others, ...(c.objects as unknown as Resource[])], { withServices: true }));
      // Plugins by kind and config, as a set: the controller names its instances
      // ingress.<name>.<plugin>, convert <name>-<plugin>; the data plane runs them by phase.
      const routes = (b: typeof before) =>
        b.snapshot.table.routes
          .map((r) =>
            JSON.stringify({
              match: asConverted(r),
              httpsRedirect: r.httpsRedirect ?? false,
              answer: r.handler.type,
              plugins: r.plugins
                .map((p) => JSON.stringify({ plugin: p.name, config: p.config }))
                .sort(),
            }),
          )
          .sort();
      const [was, now] = [routes(before), routes(after)];
      expect(now.length).toBeGreaterThan(0);
      expect(now.filter((r) => !was.includes(r))).toEqual([]);
      if (c.leftOut.length === 0) expect(now).toEqual(was);
    },
  );

  // The same through Sluice's Gateway API translation: the HTTPRoutes (on a Gateway of Sluice's
  // class that admits routes of every namespace) compile to routes the Ingresses compile to. The
  // https redirect is not compared: the HTTPRoute output lists it as left out.
  const GATEWAY = `apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: { name: sluice, generation: 1 }
spec: { controllerName: sluice.dev/gateway-controller }
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: gw, namespace: infra, generation: 1 }
spec:
  gatewayClassName: sluice
  listeners: [{ name: http, port: 80, protocol: HTTP, allowedRoutes: { namespaces: { from: All } } }]
`;
  it.each(readdirSync(INGRESS).filter((f) => f.endsWith('.in.yaml')))(
    'the HTTPRoutes of %s compile to routes the Ingresses compile to',
    (file) => {
      const all = parseAllDocuments(readFileSync(join(INGRESS, file), 'utf8'))
        .map((d) => d.toJS() as Resource | null)
        .filter((o): o is Resource => o !== null);
      const ours = [...ingressesOf(resourceSetFrom(all, { withServices: true }), DEFAULT_INGRESS_CLASS).values()];
      const c = convertToHTTPRoutes(ours, { namespace: 'infra', name: 'gw' });
      const gateway = parseAllDocuments(GATEWAY).map((d) => d.toJS() as Resource);
      const others = all.filter((o) => o.kind !== 'Ingress');
      const before = build(resourceSetFrom(all, { withServices: true }));
      const after = build(
        resourceSetFrom([...gateway, ...others, ...(c.objects as unknown as Resource[])], { withServices: true }),
      );
      // Plugins as a set (the data plane runs them by phase), by kind and config.
      const routes = (b: typeof before) =>
        b.snapshot.table.routes
          .map((r) =>
            JSON.stringify({
              match: asConverted(r),
              answer: r.handler.type,
              plugins: r.plugins
                .map((p) => JSON.stringify({ plugin: p.name, config: p.config }))
                .sort(),
            }),
          )
          .sort();
      const [was, now] = [routes(before), routes(after)];
      expect(now.length).toBeGreaterThan(0);
      expect(now.filter((r) => !was.includes(r))).toEqual([]);
    },
  );
});
