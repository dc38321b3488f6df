/**
 * What buildRuntime makes of a table's Gateway listeners (runtime/listener-port.ts): per port,
 * the listener a Host goes to (an exact hostname, then the longest "*.suffix", which takes one
 * or more labels but not the bare suffix, then the listener without a hostname; none: no
 * listener), only that listener's routes as candidates (isolation), a route naming several
 * listeners on each, and the proxy's own matcher without any listener's route.
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { Route } from '../../dataplane/config/route-table.ts';
import { validateRouteTable } from '../../dataplane/config/validate.ts';
import { createLogger } from '../../dataplane/observability/log.ts';
import { Metrics } from '../../dataplane/observability/metrics.ts';
import { Background } from '../../dataplane/pipeline/background.ts';
import type { RuntimeDeps } from '../../dataplane/pipeline/route.ts';
import { buildRuntime } from '../../dataplane/runtime/build-runtime.ts';
import { Stores } from '../../dataplane/stores/open-stores.ts';
import { PoolRegistry } from '../../dataplane/upstream/pools.ts';
import { listener, route, snapshot, upstream } from '../helpers/tables.ts';

const pools = new PoolRegistry();
const stores = new Stores();
const deps: RuntimeDeps = {
  log: createLogger('silent'),
  metrics: new Metrics({ processMetrics: false }),
  limits: { maxBodyBytes: 1024 * 1024, replicasHint: 1 },
  accessLog: false,
  stores,
  background: new Background(),
};
afterAll(async () => {
  await pools.closeAll();
  await stores.close();
});

const u = upstream('u', 'http://127.0.0.1:1');
const on = (name: string, path: string, ...listeners: string[]): Route =>
  route(name, u.id, path, { listeners: listeners.map((l) => `listener/test/gw/${l}`) });

function runtimeOf(routes: Route[], listeners: ReturnType<typeof listener>[]) {
  const s = snapshot(routes, [u], { listeners });
  expect(validateRouteTable(s.table)).toEqual([]);
  return buildRuntime(s.hash, s.table, pools, deps);
}

describe('listener ports in the runtime', () => {
  const rt = runtimeOf(
    // In precedence order, as the controller sorts: the longer path first.
    [
      on('both', '/both', 'exact', 'other'),
      on('exact', '/', 'exact'),
      on('short', '/', 'short'),
      on('long', '/', 'long'),
      on('any', '/', 'any'),
      route('own', u.id, '/'),
    ],
    [
      listener('any', 8001),
      listener('short', 8001, { hostname: '*.example.com' }),
      listener('long', 8001, { hostname: '*.api.example.com' }),
      listener('exact', 8001, { hostname: 'www.api.example.com' }),
      listener('other', 8002, { hostname: 'other.test' }),
    ],
  );
  afterAll(() => rt.close());
  const port = rt.listenerPorts.get(8001)!;
  const listenerOf = (host: string) => port.listenerFor(host)?.id.split('/').pop() ?? null;
  const routeOf = (p: number, host: string, path = '/x') =>
    rt.listenerPorts.get(p)?.matcher.match(path, 'GET', host, {})?.entry.source.name ?? null;

  it('has one entry per port, with its protocol and listeners most specific first', () => {
    expect([...rt.listenerPorts.keys()].sort()).toEqual([8001, 8002]);
    expect(port.protocol).toBe('HTTP');
    expect(port.listeners.map((l) => l.hostname)).toEqual([
      'www.api.example.com',
      '*.api.example.com',
      '*.example.com',
      null,
    ]);
  });

  it('sends a host to the exact listener, then the longest wildcard, then the catch-all', () => {
    expect(listenerOf('www.api.example.com')).toBe('exact');
    expect(listenerOf('v1.api.example.com')).toBe('long');
    expect(listenerOf('shop.example.com')).toBe('short');
    expect(listenerOf('elsewhere.test')).toBe('any');
  });

  it('lets a wildcard take several labels but not its bare suffix', () => {
    expect(listenerOf('a.b.c.example.com')).toBe('short');
    expect(listenerOf('a.b.api.example.com')).toBe('long');
    expect(listenerOf('api.example.com')).toBe('short');
    expect(listenerOf('example.com')).toBe('any');
  });

  it("matches only the chosen listener's routes (isolation)", () => {
    expect(routeOf(8001, 'www.api.example.com')).toBe('exact');
    expect(routeOf(8001, 'x.api.example.com')).toBe('long');
    expect(routeOf(8001, 'elsewhere.test')).toBe('any');
    // /both is on `exact` (and on port 8002's `other`), not on `long`: no fallback to another listener.
    expect(routeOf(8001, 'www.api.example.com', '/both/1')).toBe('both');
    expect(routeOf(8001, 'x.api.example.com', '/both/1')).toBe('long');
  });

  it('serves a route naming several listeners on each of them', () => {
    expect(routeOf(8002, 'other.test', '/both')).toBe('both');
    expect(routeOf(8002, 'other.test', '/x')).toBeNull();
  });

  it('matches nothing for a host no listener of the port takes', () => {
    expect(rt.listenerPorts.get(8002)!.listenerFor('www.api.example.com')).toBeNull();
    expect(routeOf(8002, 'www.api.example.com', '/both')).toBeNull();
  });

  it("keeps every listener's routes off the proxy's own matcher", () => {
    expect(rt.matcher.match('/both', 'GET', 'www.api.example.com', {})?.entry.source.name).toBe('own');
    expect(rt.matcher.match('/x', 'GET', 'elsewhere.test', {})?.entry.source.name).toBe('own');
  });

  it('has no listener port without listeners', () => {
    const plain = runtimeOf([route('own', u.id, '/')], []);
    expect(plain.listenerPorts.size).toBe(0);
    plain.close();
  });
});
