/**
 * Gateway API conformance, GATEWAY-HTTP core, routing: our own tests of the upstream suite's
 * (v1.6.1) of the same names and intent, on kapi with the suite's manifests and echo back ends,
 * two data planes and a controller (env.ts). Each applies its manifest, waits for the route's
 * status (Accepted, ResolvedRefs) and the Gateway's Programmed, then sends requests to both
 * data planes and checks which back end answered and what it saw.
 */
import { afterAll, beforeAll, describe, it } from 'vitest';
import {
  type Env,
  expectRequest,
  expectRequestHeaderModifier,
  gatewayProgrammed,
  INFRA,
  routeParent,
  startEnv,
} from './env.ts';

const RUN = process.env.KUBECONFIG !== undefined;
let env: Env;

beforeAll(async () => {
  if (RUN) env = await startEnv();
}, 120_000);
afterAll(() => env?.stop(), 60_000);

const v = (n: number) => ({ namespace: INFRA, backend: `infra-backend-v${n}` });

describe.skipIf(!RUN)('GATEWAY-HTTP core: routing', () => {
  it('HTTPRouteSimpleSameNamespace', async () => {
    await env.withManifest('httproute-simple-same-namespace', async () => {
      await routeParent(env, INFRA, 'gateway-conformance-infra-test', 'same-namespace');
      await gatewayProgrammed(env, INFRA, 'same-namespace');
      const urls = await env.gatewayUrls(INFRA, 'same-namespace', 80);
      await expectRequest(urls, '/', v(1));
    });
  }, 60_000);

  it('HTTPRouteExactPathMatching', async () => {
    await env.withManifest('httproute-exact-path-matching', async () => {
      await routeParent(env, INFRA, 'exact-matching', 'same-namespace');
      const urls = await env.gatewayUrls(INFRA, 'same-namespace', 80);
      await expectRequest(urls, '/one', v(1));
      await expectRequest(urls, '/two', v(2));
      await expectRequest(urls, '/', { status: 404 });
      await expectRequest(urls, '/one/example', { status: 404 });
      await expectRequest(urls, '/two/', { status: 404 });
    });
  }, 60_000);

  it('HTTPRouteHeaderMatching', async () => {
    await env.withManifest('httproute-header-matching', async () => {
      await routeParent(env, INFRA, 'header-matching', 'same-namespace');
      const urls = await env.gatewayUrls(INFRA, 'same-namespace', 80);
      const h = (headers: Record<string, string>) => ({ headers });
      await expectRequest(urls, '/', v(1), h({ Version: 'one' }));
      await expectRequest(urls, '/', v(2), h({ Version: 'two' }));
      await expectRequest(urls, '/', v(1), h({ Version: 'two', Color: 'orange' }));
      await expectRequest(urls, '/', v(1), h({ Color: 'blue' }));
      await expectRequest(urls, '/', v(1), h({ Color: 'green' }));
      await expectRequest(urls, '/', v(2), h({ Color: 'red' }));
      await expectRequest(urls, '/', v(2), h({ Color: 'yellow' }));
      await expectRequest(urls, '/', { status: 404 }, h({ Version: 'three' }));
      await expectRequest(urls, '/', { status: 404 }, h({ Color: 'purple' }));
    });
  }, 60_000);

  it('HTTPRouteMatching', async () => {
    await env.withManifest('httproute-matching', async () => {
      await routeParent(env, INFRA, 'matching', 'same-namespace');
      const urls = await env.gatewayUrls(INFRA, 'same-namespace', 80);
      await expectRequest(urls, '/', v(1));
      await expectRequest(urls, '/example', v(1));
      await expectRequest(urls, '/', v(1), { headers: { Version: 'one' } });
      await expectRequest(urls, '/v2', v(2));
      await expectRequest(urls, '/v2/example', v(2));
      await expectRequest(urls, '/', v(2), { headers: { Version: 'two' } });
      await expectRequest(urls, '/v2example', v(1));
      await expectRequest(urls, '/foo/v2/example', v(1));
    });
  }, 60_000);

  it('HTTPRouteMatchingAcrossRoutes', async () => {
    await env.withManifest('httproute-matching-across-routes', async () => {
      await routeParent(env, INFRA, 'matching-part1', 'same-namespace');
      await routeParent(env, INFRA, 'matching-part2', 'same-namespace');
      const urls = await env.gatewayUrls(INFRA, 'same-namespace', 80);
      const host = (h: string, headers: Record<string, string> = {}) => ({
        headers: { Host: h, ...headers },
      });
      await expectRequest(urls, '/', v(1), host('example.com'));
      await expectRequest(urls, '/example', v(1), host('example.net'));
      await expectRequest(urls, '/', v(1), host('example.com', { Version: 'one' }));
      await expectRequest(urls, '/v2', v(2), host('example.com'));
      await expectRequest(urls, '/v2/example', v(2), host('example.com'));
      await expectRequest(urls, '/', v(2), host('example.com', { Version: 'two' }));
      await expectRequest(urls, '/v2', v(1), host('example.net'));
      await expectRequest(urls, '/', { status: 404 }, host('example.org'));
    });
  }, 60_000);

  it('HTTPRouteCrossNamespace', async () => {
    await env.withManifest('httproute-cross-namespace', async () => {
      const ns = 'gateway-conformance-web-backend';
      await routeParent(env, ns, 'cross-namespace', 'backend-namespaces');
      const urls = await env.gatewayUrls(INFRA, 'backend-namespaces', 80);
      await expectRequest(urls, '/', { namespace: ns, backend: 'web-backend' });
    });
  }, 60_000);

  it('HTTPRouteHostnameIntersection', async () => {
    await env.withManifest('httproute-hostname-intersection', async () => {
      const gw = 'httproute-hostname-intersection';
      for (const r of [
        'specific-host-matches-listener-specific-host',
        'specific-host-matches-listener-wildcard-host',
        'wildcard-host-matches-listener-specific-host',
        'wildcard-host-matches-listener-wildcard-host',
      ])
        await routeParent(env, INFRA, r, gw);
      await routeParent(env, INFRA, 'no-intersecting-hosts', gw, { accepted: 'NoMatchingListenerHostname' });
      const urls = await env.gatewayUrls(INFRA, gw, 80);
      const host = (h: string) => ({ headers: { Host: h } });
      await expectRequest(urls, '/s1', v(1), host('very.specific.com'));
      await expectRequest(urls, '/s1', { status: 404 }, host('non.matching.com'));
      await expectRequest(urls, '/s2', v(2), host('foo.wildcard.io'));
      await expectRequest(urls, '/s2', v(2), host('bar.wildcard.io'));
      await expectRequest(urls, '/s2', v(2), host('foo.bar.wildcard.io'));
      await expectRequest(urls, '/s2', { status: 404 }, host('wildcard.io'));
      await expectRequest(urls, '/s3', v(3), host('very.specific.com'));
      await expectRequest(urls, '/s4', v(1), host('foo.anotherwildcard.io'));
      await expectRequest(urls, '/s4', v(1), host('foo.bar.anotherwildcard.io'));
      await expectRequest(urls, '/s5', { status: 404 }, host('specific.but.wrong.com'));
      const all = await env.gatewayUrls(INFRA, 'httproute-hostname-intersection-all', 80);
      await routeParent(
        env,
        INFRA,
        'httproute-hostname-intersection-all',
        'httproute-hostname-intersection-all',
      );
      for (const h of ['first.com', 'sub.first.com', 'second.com', 'sub.second.com'])
        await expectRequest(all, '/', v(2), host(h));
      await expectRequest(all, '/', { status: 404 }, host('third.com'));
    });
  }, 60_000);

  it('HTTPRouteListenerHostnameMatching', async () => {
    await env.withManifest('httproute-listener-hostname-matching', async () => {
      const gw = 'httproute-listener-hostname-matching';
      await routeParent(env, INFRA, 'backend-v1', gw);
      await routeParent(env, INFRA, 'backend-v2', gw);
      await routeParent(env, INFRA, 'backend-v3', gw, { sectionName: 'listener-3' });
      const urls = await env.gatewayUrls(INFRA, gw, 80);
      const host = (h: string) => ({ headers: { Host: h } });
      await expectRequest(urls, '/', v(1), host('bar.com'));
      await expectRequest(urls, '/', v(2), host('foo.bar.com'));
      await expectRequest(urls, '/', v(3), host('baz.bar.com'));
      await expectRequest(urls, '/', v(3), host('boo.bar.com'));
      await expectRequest(urls, '/', v(3), host('multiple.prefixes.bar.com'));
      await expectRequest(urls, '/', v(3), host('multiple.prefixes.foo.com'));
      await expectRequest(urls, '/', { status: 404 }, host('foo.com'));
      await expectRequest(urls, '/', { status: 404 }, host('no.matching.host'));
    });
  }, 60_000);

  it('HTTPRouteMultipleGateways', async () => {
    await env.withManifest('httproute-multiple-gateways', async () => {
      await routeParent(env, INFRA, 'multiple-gateways-shared-route', 'same-namespace');
      await routeParent(env, INFRA, 'multiple-gateways-shared-route', 'all-namespaces');
      const same = await env.gatewayUrls(INFRA, 'same-namespace', 80);
      const all = await env.gatewayUrls(INFRA, 'all-namespaces', 80);
      // Two Gateways on port 80 without hostnames: each its own address, its own routes.
      await expectRequest(same, '/shared', v(1));
      await expectRequest(all, '/shared', v(1));
      await expectRequest(same, '/', v(2));
      await expectRequest(all, '/', v(3));
    });
  }, 60_000);

  it('HTTPRouteRequestHeaderModifier', async () => {
    await env.withManifest('httproute-request-header-modifier', async () => {
      await routeParent(env, INFRA, 'request-header-modifier', 'same-namespace');
      await expectRequestHeaderModifier(await env.gatewayUrls(INFRA, 'same-namespace', 80));
    });
  }, 60_000);
});
