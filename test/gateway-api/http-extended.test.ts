/**
 * Gateway API conformance, GATEWAY-HTTP extended: our own tests of the upstream suite's (v1.6.1)
 * of the same names and intent (see http-routing.test.ts for how they run).
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { http1, type Reply, wsRoundTrip } from '../helpers/gateway-api/clients.ts';
import { waitFor } from '../helpers/until.ts';
import { type Env, expectRequest, expectRequestHeaderModifier, INFRA, routeParent, startEnv } from './env.ts';

const RUN = process.env.KUBECONFIG !== undefined;
let env: Env;

beforeAll(async () => {
  if (RUN) env = await startEnv();
}, 120_000);
afterAll(() => env?.stop(), 60_000);

const v = (n: number) => ({ namespace: INFRA, backend: `infra-backend-v${n}` });

/** Waits until every data plane answers `path` with `status`, and returns one reply. */
async function answered(urls: readonly string[], path: string, status: number, headers = {}): Promise<Reply> {
  const replies = await waitFor(
    `${path} answered ${status}`,
    () => Promise.all(urls.map((u) => http1(`${u}${path}`, { headers }))),
    (rs) => rs.every((r) => r.status === status),
  );
  return replies[0];
}

describe.skipIf(!RUN)('GATEWAY-HTTP extended', () => {
  it('HTTPRouteMethodMatching', async () => {
    await env.withManifest('httproute-method-matching', async () => {
      await routeParent(env, INFRA, 'method-matching', 'same-namespace');
      const urls = await env.gatewayUrls(INFRA, 'same-namespace', 80);
      await expectRequest(urls, '/', v(1), { method: 'POST' });
      await expectRequest(urls, '/', v(2), { method: 'GET' });
      await expectRequest(urls, '/path1', v(1), { method: 'GET' });
      await expectRequest(urls, '/', v(2), { method: 'PUT', headers: { version: 'one' } });
      await expectRequest(urls, '/path2', v(3), { method: 'POST', headers: { version: 'two' } });
      await expectRequest(urls, '/path3', v(1), { method: 'PATCH' });
      await expectRequest(urls, '/path4', v(1), { method: 'DELETE', headers: { version: 'three' } });
      await expectRequest(urls, '/', { status: 404 }, { method: 'PUT' });
      await expectRequest(urls, '/path4', { status: 404 }, { method: 'DELETE' });
    });
  }, 60_000);

  it('HTTPRouteQueryParamMatching', async () => {
    await env.withManifest('httproute-query-param-matching', async () => {
      await routeParent(env, INFRA, 'query-param-matching', 'same-namespace');
      const urls = await env.gatewayUrls(INFRA, 'same-namespace', 80);
      const version = (v: string) => ({ headers: { version: v } });
      for (const [path, n] of [
        ['/?animal=whale', 1],
        ['/?animal=dolphin', 2],
        ['/?animal=dolphin&color=blue', 3], // two query matches outrank one
        ['/?ANIMAL=Whale', 3], // names and values are case-sensitive
        ['/?animal=whale&otherparam=irrelevant', 1],
        ['/?animal=dolphin&color=yellow', 2],
        ['/path1?animal=whale', 1],
        ['/path3?animal=shark', 1],
        ['/path5?animal=hydra', 1], // a longer path outranks a query match
      ] as const)
        await expectRequest(urls, path, v(n));
      for (const path of [
        '/?color=blue',
        '/?animal=dog',
        '/?animal=whaledolphin',
        '/',
        '/?animal=shark', // /path3 and the query: both or nothing
        '/path4?animal=kraken', // without its header
      ])
        await expectRequest(urls, path, { status: 404 });
      await expectRequest(urls, '/?animal=whale', v(2), version('one'));
      await expectRequest(urls, '/path2?animal=whale', v(3), version('two'));
      await expectRequest(urls, '/path4?animal=kraken', v(1), version('three'));
      await expectRequest(urls, '/?animal=hydra', v(3), version('four')); // a header match outranks a query match
    });
  }, 90_000);

  /** The values the back end saw of a header, each line split on its commas (RFC 9110 §5.3: the same). */
  const valuesOf = (r: Reply, name: string) =>
    Object.entries(r.answer?.headers ?? {})
      .filter(([k]) => k.toLowerCase() === name.toLowerCase())
      .flatMap(([, vs]) => vs.flatMap((v) => v.split(/,\s*/)));

  /** The RequestHeaderModifier both rewrite manifests pair with a rewrite, as the back end saw it. */
  const MODIFIED = {
    headers: {
      'X-Header-Remove': 'remove-val',
      'X-Header-Add-Append': 'append-val-1',
      'X-Header-Set': 'set-val',
    },
  };
  function expectModified(replies: readonly Reply[]): void {
    for (const r of replies) {
      expect(valuesOf(r, 'X-Header-Add')).toEqual(['header-val-1']);
      expect(valuesOf(r, 'X-Header-Add-Append')).toEqual(['append-val-1', 'header-val-2']);
      expect(valuesOf(r, 'X-Header-Set')).toEqual(['set-overwrites-values']);
      expect(valuesOf(r, 'X-Header-Remove')).toEqual([]);
    }
  }

  it('HTTPRouteRewriteHost', async () => {
    await env.withManifest('httproute-rewrite-host', async () => {
      await routeParent(env, INFRA, 'rewrite-host', 'same-namespace');
      const urls = await env.gatewayUrls(INFRA, 'same-namespace', 80);
      const at = { headers: { Host: 'rewrite.example' } };
      for (const [path, n, host] of [
        ['/one', 1, 'one.example.org'],
        ['/two', 2, 'example.org'],
      ] as const)
        for (const r of await expectRequest(urls, path, v(n), at)) expect(r.answer?.host).toBe(host);
      const both = await expectRequest(urls, '/rewrite-host-and-modify-headers', v(2), {
        headers: { ...MODIFIED.headers, ...at.headers },
      });
      for (const r of both) expect(r.answer?.host).toBe('test.example.org');
      expectModified(both);
    });
  }, 60_000);

  it('HTTPRouteRewritePath', async () => {
    await env.withManifest('httproute-rewrite-path', async () => {
      await routeParent(env, INFRA, 'rewrite-path', 'same-namespace');
      const urls = await env.gatewayUrls(INFRA, 'same-namespace', 80);
      for (const [path, seen] of [
        ['/prefix/one/two', '/one/two'],
        ['/prefix/one/two?q=1', '/one/two?q=1'], // the query goes along
        ['/strip-prefix/three', '/three'],
        ['/strip-prefix', '/'],
        ['/full/one/two', '/one'],
      ])
        await expectRequest(urls, path, { ...v(1), path: seen });
      expectModified(
        await expectRequest(
          urls,
          '/full/rewrite-path-and-modify-headers/test',
          { ...v(1), path: '/test' },
          MODIFIED,
        ),
      );
      expectModified(
        await expectRequest(
          urls,
          '/prefix/rewrite-path-and-modify-headers/one',
          { ...v(1), path: '/prefix/one' },
          MODIFIED,
        ),
      );
    });
  }, 60_000);

  it('HTTPRouteBackendRequestHeaderModifier', async () => {
    const urls = await env.gatewayUrls(INFRA, 'same-namespace', 80);
    await env.withManifest('httproute-request-header-modifier-backend', async () => {
      await routeParent(env, INFRA, 'request-header-modifier', 'same-namespace');
      await expectRequestHeaderModifier(urls);
    });
    // Two weighted backends, each setting its own name: a request carries only its own.
    await env.withManifest('httproute-request-header-modifier-backend-weights', async () => {
      await routeParent(env, INFRA, 'request-header-modifier-backend-weights', 'same-namespace');
      await expectRequest(urls, '/', { namespace: INFRA });
      const replies = (
        await Promise.all(Array.from({ length: 10 }, () => Promise.all(urls.map((u) => http1(`${u}/`)))))
      ).flat();
      const byBackend = new Map<string, string[]>();
      for (const r of replies) {
        expect(r.status).toBe(200);
        const backend = r.answer!.pod.replace(/-[0-9]+$/, '');
        byBackend.set(backend, [...(byBackend.get(backend) ?? []), ...valuesOf(r, 'Backend')]);
      }
      expect([...byBackend.keys()].sort()).toEqual(['infra-backend-v1', 'infra-backend-v2']);
      for (const [backend, seen] of byBackend) expect(new Set(seen)).toEqual(new Set([backend]));
    });
  }, 90_000);

  it('HTTPRouteNamedRule', async () => {
    await env.withManifest('httproute-named-rule', async () => {
      await routeParent(env, INFRA, 'http-named-rules', 'same-namespace');
      const urls = await env.gatewayUrls(INFRA, 'same-namespace', 80);
      await expectRequest(urls, '/named', v(1));
      await expectRequest(urls, '/unnamed', v(2));
    });
  }, 60_000);

  // The echo waits ?delay= before answering: past the rule's timeout the gateway answers 504.
  for (const [name, manifest, route, timed, disabled] of [
    [
      'HTTPRouteTimeoutRequest',
      'httproute-timeout-request',
      'request-timeout',
      '/request-timeout',
      '/disable-request-timeout',
    ],
    [
      'HTTPRouteTimeoutBackendRequest',
      'httproute-timeout-backend-request',
      'backend-request-timeout',
      '/backend-timeout',
      '/disable-backend-timeout',
    ],
  ] as const)
    it(name, async () => {
      await env.withManifest(manifest, async () => {
        await routeParent(env, INFRA, route, 'same-namespace');
        const urls = await env.gatewayUrls(INFRA, 'same-namespace', 80);
        await expectRequest(urls, timed, v(1));
        await expectRequest(urls, `${timed}?delay=1s`, { status: 504 });
        // "0s" turns the timeout off: a second's wait is answered.
        await expectRequest(urls, `${disabled}?delay=1s`, { ...v(1), path: `${disabled}?delay=1s` });
      });
    }, 60_000);

  /** Requests `service` received whose path holds `marker` (a mirror's copies), once `n` have arrived. */
  async function copiesOf(service: string, marker: string, n: number) {
    return waitFor(
      `${n} copies of ${marker} at ${service}`,
      () => env.backends.requests(INFRA, service).filter((r) => r.path.includes(marker)),
      (rs) => rs.length >= n,
    );
  }

  /** A request answered by infra-backend-v1 whose copy reaches every mirror, modified as MODIFIED says when asked. */
  async function expectMirrored(
    urls: readonly string[],
    path: string,
    mirrors: readonly string[],
    modified = false,
  ) {
    for (const [k, u] of urls.entries()) {
      const marker = `${path}?copy=${randomUUID()}`;
      await expectRequest([u], marker, v(1), modified ? MODIFIED : {});
      for (const m of mirrors) {
        const [copy] = await copiesOf(m, marker, 1);
        expect(copy.path, `${m} through plane ${k}`).toBe(marker);
        if (modified) expectModified([{ answer: copy } as Reply]);
      }
    }
  }

  it('HTTPRouteRequestMirror', async () => {
    await env.withManifest('httproute-request-mirror', async () => {
      await routeParent(env, INFRA, 'request-mirror', 'same-namespace');
      const urls = await env.gatewayUrls(INFRA, 'same-namespace', 80);
      await expectMirrored(urls, '/mirror', ['infra-backend-v2']);
      await expectMirrored(urls, '/mirror-and-modify-headers', ['infra-backend-v2'], true);
    });
  }, 60_000);

  it('HTTPRouteRequestMultipleMirrors', async () => {
    await env.withManifest('httproute-request-multiple-mirrors', async () => {
      await routeParent(env, INFRA, 'request-multiple-mirrors', 'same-namespace');
      const urls = await env.gatewayUrls(INFRA, 'same-namespace', 80);
      const both = ['infra-backend-v2', 'infra-backend-v3'];
      await expectMirrored(urls, '/multi-mirror', both);
      await expectMirrored(urls, '/multi-mirror-and-modify-request-headers', both, true);
    });
  }, 60_000);

  it('HTTPRouteRequestPercentageMirror', async () => {
    await env.withManifest('httproute-request-percentage-mirror', async () => {
      await routeParent(env, INFRA, 'request-percentage-mirror', 'same-namespace');
      const urls = await env.gatewayUrls(INFRA, 'same-namespace', 80);
      await expectRequest(urls, '/percent-mirror', v(1)); // the route is served everywhere
      // 40 requests over the two planes: each copies its share within a request (weighted.ts).
      for (const [path, percent] of [
        ['/percent-mirror', 20],
        ['/percent-mirror-fraction', 50],
        ['/percent-mirror-and-modify-headers', 35],
      ] as const) {
        const marker = `${path}?run=${randomUUID()}`;
        for (let i = 0; i < 20; i++)
          for (const u of urls) {
            const r = await http1(`${u}${marker}`, path.endsWith('headers') ? MODIFIED : {});
            expect(r.answer?.pod).toMatch(/^infra-backend-v1-/);
          }
        const want = (40 * percent) / 100;
        const copies = await copiesOf('infra-backend-v2', marker, want - 2);
        await new Promise((r) => setTimeout(r, 300)); // any late copy
        const n = env.backends
          .requests(INFRA, 'infra-backend-v2')
          .filter((r) => r.path.includes(marker)).length;
        expect(n, path).toBeGreaterThanOrEqual(want - 2);
        expect(n, path).toBeLessThanOrEqual(want + 2);
        if (path.endsWith('headers')) expectModified([{ answer: copies[0] } as Reply]);
      }
    });
  }, 90_000);

  it('HTTPRouteCORS', async () => {
    await env.withManifest('httproute-cors', async () => {
      for (const r of [
        'cors-multiple-origins-methods-headers',
        'cors-wildcard-methods',
        'cors-wildcard-origin',
        'cors-wildcard-methods-headers',
      ])
        await routeParent(env, INFRA, r, 'same-namespace');
      const urls = await env.gatewayUrls(INFRA, 'same-namespace', 80);
      /** A list header as a set (order and whitespace aside), or undefined when absent. */
      const list = (v: string | string[] | undefined) =>
        v === undefined
          ? undefined
          : String(v)
              .split(',')
              .map((x) => x.trim())
              .sort()
              .join(',');
      type Want = Record<string, string | readonly string[] | null>;
      /** Every plane answers with one of `statuses` and, per header, a value among those given (a list as a set), or none (null). */
      const expectCors = async (
        path: string,
        method: string,
        headers: Record<string, string>,
        statuses: number[],
        want: Want,
      ) => {
        const ok = (r: Reply) =>
          statuses.includes(r.status) &&
          Object.entries(want).every(([name, values]) => {
            const got = list(r.headers[name]);
            if (values === null) return got === undefined;
            return (typeof values === 'string' ? [values] : values).some((v) => list(v) === got);
          });
        const send = () => Promise.all(urls.map((u) => http1(`${u}${path}`, { method, headers })));
        await waitFor(`${method} ${path} answered with its CORS headers`, send, (rs) => rs.every(ok));
        for (const r of await send())
          expect(ok(r), `${method} ${path}: ${r.status} ${JSON.stringify(r.headers)}`).toBe(true);
      };
      const preflight = (origin: string, method: string, requestHeaders?: string) => ({
        Origin: origin,
        'access-control-request-method': method,
        ...(requestHeaders && { 'access-control-request-headers': requestHeaders }),
      });
      const full = (origin: string) => ({
        'access-control-allow-origin': origin,
        'access-control-allow-methods': 'GET, OPTIONS',
        'access-control-allow-headers': 'x-header-1, x-header-2',
        'access-control-expose-headers': 'x-header-3, x-header-4',
        'access-control-max-age': '3600',
        'access-control-allow-credentials': 'true',
      });
      const asked = 'x-header-1, x-header-2';
      await expectCors(
        '/cors-1',
        'OPTIONS',
        preflight('https://www.foo.com', 'GET', asked),
        [200, 204],
        full('https://www.foo.com'),
      );
      await expectCors(
        '/cors-1',
        'OPTIONS',
        preflight('https://www.bar.com', 'GET', asked),
        [200],
        full('https://www.bar.com'),
      );
      // "*" in a host takes any number of labels in front.
      await expectCors(
        '/cors-1',
        'OPTIONS',
        preflight('https://xpto.www.bar.com', 'GET', asked),
        [200],
        full('https://xpto.www.bar.com'),
      );
      await expectCors('/cors-1', 'OPTIONS', preflight('https://foobar.com', 'GET'), [200, 204, 403], {
        'access-control-allow-origin': null,
      });
      for (const origin of ['https://www.foo.com', 'https://www.bar.com'])
        await expectCors('/cors-1', 'GET', { Origin: origin }, [200, 204], {
          'access-control-allow-origin': origin,
        });
      await expectCors('/cors-1', 'GET', { Origin: 'https://foobar.com' }, [200], {
        'access-control-allow-origin': null,
      });
      await expectCors('/cors-2', 'OPTIONS', preflight('https://www.foo.com', 'POST'), [200, 204], {
        'access-control-allow-methods': ['POST', '*'],
        'access-control-allow-origin': 'https://www.foo.com',
        'access-control-allow-credentials': null,
      });
      for (const origin of ['https://foobar.com', 'https://foobar.com:12345']) {
        await expectCors('/cors-wildcard-origin', 'OPTIONS', preflight(origin, 'PUT'), [200, 204], {
          'access-control-allow-origin': [origin, '*'],
          'access-control-allow-methods': 'PUT',
          'access-control-allow-credentials': null,
        });
        await expectCors('/cors-wildcard-origin', 'PUT', { Origin: origin }, [200], {
          'access-control-allow-origin': [origin, '*'],
          'access-control-allow-credentials': null,
        });
      }
      // allowOrigins "*" with allowCredentials: the origin is echoed, never "*".
      const other = 'https://other.foo.com';
      await expectCors('/cors-wildcard-methods-headers', 'OPTIONS', preflight(other, 'PUT', asked), [200], {
        'access-control-allow-origin': other,
        'access-control-allow-methods': 'PUT',
        'access-control-allow-headers': asked,
        'access-control-allow-credentials': 'true',
      });
      await expectCors(
        '/cors-wildcard-methods-headers-unauth',
        'OPTIONS',
        preflight(other, 'PUT', asked),
        [200],
        {
          'access-control-allow-origin': [other, '*'],
          'access-control-allow-methods': ['PUT', '*'],
          'access-control-allow-headers': [asked, '*'],
          'access-control-allow-credentials': null,
        },
      );
      const withAuth = { Origin: other, Authorization: 'Bearer test' };
      await expectCors('/cors-wildcard-methods-headers', 'GET', withAuth, [200], {
        'access-control-allow-origin': other,
        'access-control-allow-credentials': 'true',
      });
      await expectCors('/cors-wildcard-methods-headers-unauth', 'GET', withAuth, [200], {
        'access-control-allow-origin': [other, '*'],
        'access-control-allow-credentials': null,
      });
    });
  }, 90_000);

  for (const [name, status, path] of [
    ['HTTPRoute303Redirect', 303, '/see-other'],
    ['HTTPRoute307Redirect', 307, '/temporary'],
    ['HTTPRoute308Redirect', 308, '/permanent'],
  ] as const)
    it(name, async () => {
      await env.withManifest(`httproute-${status}-redirect`, async () => {
        await routeParent(env, INFRA, `${status}-redirect`, 'same-namespace');
        const urls = await env.gatewayUrls(INFRA, 'same-namespace', 80);
        const r = await answered(urls, `${path}?x=1`, status);
        const location = new URL(String(r.headers.location));
        expect(location.pathname + location.search).toBe(`${path}?x=1`);
        expect(r.answer).toBeNull(); // answered by the gateway: no back end saw it
      });
    }, 60_000);

  it('HTTPRouteRedirectPath', async () => {
    await env.withManifest('httproute-redirect-path', async () => {
      await routeParent(env, INFRA, 'redirect-path', 'same-namespace');
      const urls = await env.gatewayUrls(INFRA, 'same-namespace', 80);
      const location = async (path: string, status = 302) =>
        new URL(String((await answered(urls, path, status)).headers.location));
      const prefix = await location('/original-prefix/lemon');
      expect(prefix.pathname).toBe('/replacement-prefix/lemon');
      expect(prefix.host).toBe(new URL(urls[0]).host);
      expect((await location('/full/path/original')).pathname).toBe('/full-path-replacement');
      const hosted = await location('/path-and-host');
      expect([hosted.hostname, hosted.pathname]).toEqual(['example.org', '/replacement-prefix']);
      expect((await location('/path-and-status', 301)).pathname).toBe('/replacement-prefix');
    });
  }, 60_000);

  it('HTTPRouteResponseHeaderModifier', async () => {
    await env.withManifest('httproute-response-header-modifier', async () => {
      await routeParent(env, INFRA, 'response-header-modifier', 'same-namespace');
      const urls = await env.gatewayUrls(INFRA, 'same-namespace', 80);
      const set = (pairs: string) => ({ 'X-Echo-Set-Header': pairs });
      const r1 = await answered(urls, '/set', 200, set('X-Header-Set: some-other-value'));
      expect(r1.headers['x-header-set']).toBe('set-overwrites-values');
      const r2 = await answered(urls, '/add', 200);
      expect(r2.headers['x-header-add']).toBe('add-appends-values');
      const r3 = await answered(urls, '/remove', 200, set('X-Header-Remove: val'));
      expect(r3.headers['x-header-remove']).toBeUndefined();
      const r4 = await answered(urls, '/multiple', 200, set('X-Header-Set-2: other, X-Header-Remove-1: val'));
      expect(r4.headers['x-header-set-1']).toBe('header-set-1');
      expect(r4.headers['x-header-set-2']).toBe('header-set-2');
      expect(r4.headers['x-header-add-1']).toBe('header-add-1');
      expect(r4.headers['x-header-remove-1']).toBeUndefined();
    });
  }, 60_000);

  it('GatewayHTTPListenerIsolation', async () => {
    await env.withManifest('gateway-http-listener-isolation', async () => {
      const gw = 'http-listener-isolation';
      for (const r of [
        'empty-hostname',
        'wildcard-example-com',
        'wildcard-foo-example-com',
        'abc-foo-example-com',
      ])
        await routeParent(env, INFRA, `attaches-to-${r}`, gw);
      const urls = await env.gatewayUrls(INFRA, gw, 80);
      const host = (h: string) => ({ headers: { Host: h } });
      // Each host reaches only the routes of the most specific listener that takes it.
      for (const [h, own, others] of [
        [
          'bar.com',
          '/empty-hostname',
          ['/wildcard-example-com', '/wildcard-foo-example-com', '/abc-foo-example-com'],
        ],
        [
          'bar.example.com',
          '/wildcard-example-com',
          ['/empty-hostname', '/wildcard-foo-example-com', '/abc-foo-example-com'],
        ],
        [
          'bar.foo.example.com',
          '/wildcard-foo-example-com',
          ['/empty-hostname', '/wildcard-example-com', '/abc-foo-example-com'],
        ],
        [
          'abc.foo.example.com',
          '/abc-foo-example-com',
          ['/empty-hostname', '/wildcard-example-com', '/wildcard-foo-example-com'],
        ],
      ] as const) {
        await expectRequest(urls, own, v(1), host(h));
        for (const p of others) await expectRequest(urls, p, { status: 404 }, host(h));
      }
    });
  }, 60_000);

  it('HTTPRouteBackendProtocolH2C', async () => {
    await env.withManifest('httproute-backend-protocol-h2c', async () => {
      await routeParent(env, INFRA, 'backend-protocol-h2c', 'same-namespace');
      const urls = await env.gatewayUrls(INFRA, 'same-namespace', 80);
      // The Service port says appProtocol kubernetes.io/h2c and its pods' port takes only h2c:
      // an HTTP/1.1 client's request reaches it in HTTP/2.
      const [r] = await expectRequest(urls, '/', v(1));
      expect(r.answer?.proto).toBe('HTTP/2.0');
    });
  }, 60_000);

  it('HTTPRouteBackendProtocolWebSocket', async () => {
    await env.withManifest('httproute-backend-protocol-websocket', async () => {
      await routeParent(env, INFRA, 'backend-protocol-ws', 'same-namespace');
      const urls = await env.gatewayUrls(INFRA, 'same-namespace', 80);
      for (const u of urls) {
        const ws = u.replace(/^http/, 'ws');
        const echoed = await waitFor(
          `a WebSocket through ${u}`,
          () => wsRoundTrip(`${ws}/ws`, 'hello').catch((err: Error) => err.message),
          (m) => m === 'hello',
        );
        expect(echoed).toBe('hello');
      }
    });
  }, 60_000);

  it('HTTPRouteListenerPortMatching', async () => {
    await env.withManifest('httproute-listener-port-matching', async () => {
      const gw = 'httproute-listener-port-matching';
      for (const r of ['backend-v1', 'backend-v2', 'backend-v3']) await routeParent(env, INFRA, r, gw);
      const host = (h: string) => ({ headers: { Host: h } });
      const at = (port: number) => env.gatewayUrls(INFRA, gw, port);
      await expectRequest(await at(80), '/', v(1), host('foo.com'));
      await expectRequest(await at(8080), '/', v(2), host('foo.com'));
      await expectRequest(await at(8080), '/', v(2), host('bar.com'));
      await expectRequest(await at(8090), '/', v(3), host('foo.com'));
      // backend-v3 names listener-4 (foo.com) of port 8090: bar.com's listener there has no route.
      await expectRequest(await at(8090), '/', { status: 404 }, host('bar.com'));
      await expectRequest(await at(80), '/', { status: 404 }, host('bar.com'));
    });
  }, 60_000);

  /** The Location a request gets (every data plane), as a URL. */
  async function location(
    urls: readonly string[],
    path: string,
    o: { status?: number; host: string; https?: boolean },
  ): Promise<string> {
    const tls = o.https
      ? { ca: env.backends.ca, servername: 'example.org', checkServerIdentity: () => undefined }
      : {};
    const replies = await waitFor(
      `${path} redirected`,
      () => Promise.all(urls.map((u) => http1(`${u}${path}`, { headers: { Host: o.host }, ...tls }))),
      (rs) => rs.every((r) => r.status === (o.status ?? 302)),
    );
    const all = new Set(replies.map((r) => String(r.headers.location)));
    expect(all.size).toBe(1);
    return [...all][0];
  }

  // A client reaches a listener through its Gateway's Service: Host carries the Gateway's port,
  // which a redirect without a port keeps (the tests dial the data planes' targetPorts directly).
  it('HTTPRouteRedirectPort', async () => {
    await env.withManifest('httproute-redirect-port', async () => {
      await routeParent(env, INFRA, 'redirect-port', 'same-namespace');
      const urls = await env.gatewayUrls(INFRA, 'same-namespace', 80);
      const host = 'gateway.test:80';
      expect(await location(urls, '/port', { host })).toBe('http://gateway.test:8083/port');
      expect(await location(urls, '/port-and-host', { host })).toBe('http://example.org:8083/port-and-host');
      expect(await location(urls, '/port-and-status', { host, status: 301 })).toBe(
        'http://gateway.test:8083/port-and-status',
      );
      expect(await location(urls, '/port-and-host-and-status', { host })).toBe(
        'http://example.org:8083/port-and-host-and-status',
      );
    });
  }, 60_000);

  it('HTTPRouteRedirectScheme', async () => {
    await env.withManifest('httproute-redirect-scheme', async () => {
      await routeParent(env, INFRA, 'redirect-scheme', 'same-namespace');
      const urls = await env.gatewayUrls(INFRA, 'same-namespace', 80);
      const host = 'gateway.test:80';
      // A new scheme without a port: that scheme's well-known port, left out.
      expect(await location(urls, '/scheme', { host })).toBe('https://gateway.test/scheme');
      expect(await location(urls, '/scheme-and-host', { host })).toBe('https://example.org/scheme-and-host');
      expect(await location(urls, '/scheme-and-status', { host, status: 301 })).toBe(
        'https://gateway.test/scheme-and-status',
      );
      expect(await location(urls, '/scheme-and-host-and-status', { host })).toBe(
        'https://example.org/scheme-and-host-and-status',
      );
    });
  }, 60_000);

  it('HTTPRouteRedirectPortAndScheme', async () => {
    await env.withManifest('httproute-redirect-port-and-scheme', async () => {
      await routeParent(env, INFRA, 'http-route-for-listener-on-port-80', 'same-namespace');
      await routeParent(
        env,
        INFRA,
        'http-route-for-listener-on-port-8080',
        'same-namespace-with-http-listener-on-8080',
      );
      await routeParent(
        env,
        INFRA,
        'http-route-for-listener-on-port-443',
        'same-namespace-with-https-listener',
      );
      const on80 = await env.gatewayUrls(INFRA, 'same-namespace', 80);
      const at80 = { host: 'gateway.test:80' };
      for (const [path, want] of [
        ['/scheme-nil-and-port-nil', 'http://example.org/scheme-nil-and-port-nil'],
        ['/scheme-nil-and-port-80', 'http://example.org/scheme-nil-and-port-80'],
        ['/scheme-nil-and-port-8080', 'http://example.org:8080/scheme-nil-and-port-8080'],
        ['/scheme-https-and-port-nil', 'https://example.org/scheme-https-and-port-nil'],
        ['/scheme-https-and-port-443', 'https://example.org/scheme-https-and-port-443'],
        ['/scheme-https-and-port-8443', 'https://example.org:8443/scheme-https-and-port-8443'],
      ])
        expect(await location(on80, path, at80)).toBe(want);
      const on8080 = await env.gatewayUrls(INFRA, 'same-namespace-with-http-listener-on-8080', 8080);
      const at8080 = { host: 'gateway.test:8080' };
      for (const [path, want] of [
        ['/scheme-nil-and-port-nil', 'http://example.org:8080/scheme-nil-and-port-nil'],
        ['/scheme-nil-and-port-80', 'http://example.org/scheme-nil-and-port-80'],
        ['/scheme-https-and-port-nil', 'https://example.org/scheme-https-and-port-nil'],
      ])
        expect(await location(on8080, path, at8080)).toBe(want);
      const on443 = await env.gatewayUrls(INFRA, 'same-namespace-with-https-listener', 443, 'https');
      const at443 = { host: 'example.org:443', https: true };
      for (const [path, want] of [
        ['/scheme-nil-and-port-nil', 'https://example.org/scheme-nil-and-port-nil'],
        ['/scheme-nil-and-port-443', 'https://example.org/scheme-nil-and-port-443'],
        ['/scheme-nil-and-port-8443', 'https://example.org:8443/scheme-nil-and-port-8443'],
        ['/scheme-http-and-port-nil', 'http://example.org/scheme-http-and-port-nil'],
        ['/scheme-http-and-port-80', 'http://example.org/scheme-http-and-port-80'],
        ['/scheme-http-and-port-8080', 'http://example.org:8080/scheme-http-and-port-8080'],
      ])
        expect(await location(on443, path, at443)).toBe(want);
    });
  }, 60_000);
});
