import { describe, expect, it } from 'vitest';
import type { Route } from '../../dataplane/config/route-table.ts';
import { hostMatcher, RouteMatcher } from '../../dataplane/runtime/router.ts';
import { route, routeMatcherInput as rt } from '../helpers/tables.ts';

// The matcher relies on table order for precedence (the controller sorts); these tests
// give it tables in precedence order and check the fallback between nodes.
function matcher(...routes: Route[]) {
  const m = new RouteMatcher(routes.map((r) => rt(r)));
  return (path: string, method = 'GET', host = 'example.com', headers: Record<string, string> = {}) => {
    const q = path.indexOf('?');
    const [p, query] = q < 0 ? [path, ''] : [path.slice(0, q), path.slice(q + 1)];
    return m.match(p, method, host, headers, query)?.entry.source.name ?? null;
  };
}

describe('RouteMatcher', () => {
  it('matches prefixes on segment boundaries', () => {
    const m = matcher(route('charges', 'u', '/charges'));
    expect(m('/charges')).toBe('charges');
    expect(m('/charges/')).toBe('charges');
    expect(m('/charges/ch_1/refunds')).toBe('charges');
    expect(m('/chargesx')).toBeNull();
    expect(m('/')).toBeNull();
  });

  it('exact routes match only the path itself', () => {
    const m = matcher(route('exact', 'u', '/health', { type: 'Exact' }));
    expect(m('/health')).toBe('exact');
    expect(m('/health/')).toBeNull();
    expect(m('/health/x')).toBeNull();
  });

  it('the longest prefix wins and shorter prefixes are the fallback', () => {
    const m = matcher(
      route('v2', 'u', '/api/v2', {
        match: { path: { type: 'Prefix', value: '/api/v2' }, headers: [{ name: 'x-beta', value: '1' }] },
      }),
      route('api', 'u', '/api'),
      route('root', 'u', '/'),
    );
    expect(m('/api/v2/items', 'GET', 'h', { 'x-beta': '1' })).toBe('v2');
    expect(m('/api/v2/items')).toBe('api');
    expect(m('/api/v1')).toBe('api');
    expect(m('/other')).toBe('root');
    expect(m('/')).toBe('root');
  });

  it('an exact route falls back to prefixes above it when its method does not match', () => {
    const m = matcher(
      route('exact', 'u', '/charges', {
        type: 'Exact',
        match: { path: { type: 'Exact', value: '/charges' }, methods: ['POST'] },
      }),
      route('prefix', 'u', '/charges'),
    );
    expect(m('/charges', 'POST')).toBe('exact');
    expect(m('/charges', 'GET')).toBe('prefix');
  });

  it('matches query parameters: exact values, anchored patterns, the first of a repeated name, decoded', () => {
    const at = (query: Route['match']['query']) => ({
      match: { path: { type: 'Prefix' as const, value: '/' }, query },
    });
    const m = matcher(
      route(
        'both',
        'u',
        '/',
        at([
          { name: 'animal', value: 'dolphin' },
          { name: 'color', value: 'blue' },
        ]),
      ),
      route('whale', 'u', '/', at([{ name: 'animal', value: 'whale' }])),
      route('id', 'u', '/', at([{ name: 'id', type: 'RegularExpression', value: '[0-9]+' }])),
      route('space', 'u', '/', at([{ name: 'q', value: 'a b' }])),
      route('root', 'u', '/'),
    );
    expect(m('/?animal=whale')).toBe('whale');
    expect(m('/x?other=1&animal=whale')).toBe('whale');
    expect(m('/?animal=dolphin&color=blue')).toBe('both');
    expect(m('/?animal=dolphin')).toBe('root'); // one of two: no match
    expect(m('/?ANIMAL=whale')).toBe('root'); // names are case-sensitive
    expect(m('/?animal=Whale')).toBe('root'); // values too
    expect(m('/?animal=whaledolphin')).toBe('root');
    expect(m('/?animal=whale&animal=dolphin')).toBe('whale'); // the first value counts
    expect(m('/?animal=dolphin&animal=whale')).toBe('root');
    expect(m('/?id=123')).toBe('id');
    expect(m('/?id=12a')).toBe('root'); // the pattern must match the whole value
    expect(m('/?q=a+b')).toBe('space');
    expect(m('/?q=a%20b')).toBe('space');
    expect(m('/')).toBe('root');
  });

  it('matches cookies: exact values, the first of a repeated name, all of them; no Cookie header, no match', () => {
    const at = (cookies: Route['match']['cookies']) => ({
      match: { path: { type: 'Prefix' as const, value: '/' }, cookies },
    });
    const m = matcher(
      route(
        'both',
        'u',
        '/',
        at([
          { name: 'canary', value: 'always' },
          { name: 'team', value: 'a' },
        ]),
      ),
      route('always', 'u', '/', at([{ name: 'canary', value: 'always' }])),
      route('never', 'u', '/', at([{ name: 'canary', value: 'never' }])),
      route('root', 'u', '/'),
    );
    const cookie = (c: string) => m('/x', 'GET', 'example.com', { cookie: c });
    expect(cookie('canary=always')).toBe('always');
    expect(cookie('a=1; canary=never; b=2')).toBe('never');
    expect(cookie('team=a; canary=always')).toBe('both');
    expect(cookie('canary=Always')).toBe('root'); // values are exact
    expect(cookie('Canary=always')).toBe('root'); // names too
    expect(cookie('canary=sometimes')).toBe('root');
    expect(cookie('canary=never; canary=always')).toBe('never'); // the first value counts
    expect(cookie('xcanary=always')).toBe('root');
    expect(m('/x')).toBe('root');
  });

  it('matches hosts exactly or by one-label wildcard', () => {
    const m = matcher(
      route('api', 'u', '/', { match: { path: { type: 'Prefix', value: '/' }, hosts: ['api.example.com'] } }),
      route('tenants', 'u', '/', {
        match: { path: { type: 'Prefix', value: '/' }, hosts: ['*.tenants.example.com'] },
      }),
    );
    expect(m('/x', 'GET', 'api.example.com')).toBe('api');
    expect(m('/x', 'GET', 'acme.tenants.example.com')).toBe('tenants');
    expect(m('/x', 'GET', 'a.b.tenants.example.com')).toBeNull();
    expect(m('/x', 'GET', 'tenants.example.com')).toBeNull();
  });

  it('keeps ":" in paths literal (not a find-my-way parameter)', () => {
    const m = matcher(
      route('colon', 'u', '/v1/items:batch', { type: 'Exact' }),
      route('param', 'u', '/v2/:id'),
    );
    expect(m('/v1/items:batch')).toBe('colon');
    expect(m('/v1/items:other')).toBeNull();
    expect(m('/v2/:id/x')).toBe('param');
    expect(m('/v2/abc')).toBeNull();
  });

  it('keeps escapes in paths literal: a route holding one matches that (normalized) path and no decoded form', () => {
    const m = matcher(
      route('cafe', 'u', '/caf%C3%A9'),
      route('pct', 'u', '/100%25', { type: 'Exact' }),
      route('colon', 'u', '/a%3Ab'),
      route('root', 'u', '/'),
    );
    expect(m('/caf%C3%A9')).toBe('cafe');
    expect(m('/caf%C3%A9/x%20y')).toBe('cafe');
    expect(m('/100%25')).toBe('pct');
    expect(m('/a%3Ab/c')).toBe('colon');
    expect(m('/café')).toBe('root');
    expect(m('/100%')).toBe('root');
    expect(m('/100%2525')).toBe('root');
    expect(m('/a:b')).toBe('root');
  });
});

describe('RouteMatcher against a brute-force reference', () => {
  // A seeded generator (mulberry32): the same tables every run, so a failure is reproducible.
  function rng(seed: number) {
    return () => {
      seed = (seed + 0x6d2b79f5) | 0;
      let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
      t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
  }
  const SEGMENTS = ['a', 'b', 'ab', 'c:d', 'x'];

  it('picks the first route in table order that matches, for 200 random tables', () => {
    const rand = rng(42);
    const pick = <T>(xs: readonly T[]) => xs[Math.floor(rand() * xs.length)];
    const randomPath = (max: number) => {
      const n = Math.floor(rand() * (max + 1));
      return n === 0 ? '/' : `/${Array.from({ length: n }, () => pick(SEGMENTS)).join('/')}`;
    };
    for (let t = 0; t < 200; t++) {
      const routes = Array.from({ length: 1 + Math.floor(rand() * 12) }, (_, i) => {
        const r = route(`r${i}`, 'u', randomPath(3), { type: rand() < 0.3 ? 'Exact' : 'Prefix' });
        if (rand() < 0.3) r.match.methods = ['POST'];
        return r;
      });
      const m = matcher(...routes);
      const reference = (path: string, method: string) =>
        routes.find((r) => {
          const p = r.match.path;
          const pathOk =
            p.type === 'Exact'
              ? p.value === path
              : p.value === '/' || path === p.value || path.startsWith(`${p.value}/`);
          return pathOk && (!r.match.methods || r.match.methods.includes(method));
        })?.source.name ?? null;
      for (let q = 0; q < 30; q++) {
        const path = randomPath(4) + (rand() < 0.2 ? '/' : '');
        const method = rand() < 0.5 ? 'GET' : 'POST';
        expect(m(path.replace('//', '/'), method), `table ${t}, ${method} ${path}`).toBe(
          reference(path.replace('//', '/'), method),
        );
      }
    }
  });
});

describe('hostMatcher', () => {
  it('"*.suffix" takes one label for GatewayRoute hosts, one or more for Gateway API hostnames, never the bare suffix', () => {
    const one = hostMatcher(['*.example.com', 'exact.org']);
    const any = hostMatcher(['*.example.com', 'exact.org'], true);
    for (const [host, single, many] of [
      ['a.example.com', true, true],
      ['a.b.example.com', false, true],
      ['example.com', false, false],
      ['aexample.com', false, false],
      ['exact.org', true, true],
      ['a.exact.org', false, false],
    ] as const) {
      expect(one(host), host).toBe(single);
      expect(any(host), host).toBe(many);
    }
  });
});
