/**
 * The data plane bench/balance.ts measures: one process, one route per variant, so variants
 * alternate second by second against the same process (the machine's other load then falls on
 * all of them alike). Each route strips its prefix and goes to the bench's upstream:
 *   /url/…  by url alone (the baseline)
 *   /ep1/…  the same address as one endpoint
 *   /ep3/…  three endpoints (127.0.0.1:18200, :18231, :18232), round robin
 *   /lr3/…  three endpoints, least-request
 *   /ch3/…  three endpoints, consistent hashing on the x-user header
 *   /wb2/…  two weighted backends (proxy `backends`, 1:1), two upstreams by url alone (two pools)
 *   /wbs/…  the url upstream named twice as weighted backends: the weighted pick's cost alone
 *   /gwl/…  the url route as an HTTPRoute compiles, served on a Gateway listener port
 *           (LISTENER_PORT = BENCH_PORT + 1, hostname-less listener): a listener's cost alone
 * Usage: BENCH_PORT=18220 node bench/balance-target.ts
 */
import { tableHash } from '../dataplane/config/wire.ts';
import type { Balance, Route, RouteTable, Upstream } from '../dataplane/config/route-table.ts';
import { startDataPlane } from '../dataplane/main.ts';
import { createLogger } from '../dataplane/observability/log.ts';
import { PORTS } from './fixtures.ts';

export const EXTRA_UPSTREAM_PORTS = [18231, 18232];
/** The Gateway listener port of /gwl/, next to the proxy port. */
export const listenerPort = (proxyPort: number) => proxyPort + 1;
const three = [PORTS.upstream, ...EXTRA_UPSTREAM_PORTS].map((port) => ({ address: '127.0.0.1', port }));

const variants: Record<string, Pick<Upstream, 'endpoints' | 'balance'>> = {
  url: {},
  ep1: { endpoints: [three[0]] },
  ep3: { endpoints: three },
  lr3: { endpoints: three, balance: { policy: 'least-request' } satisfies Balance },
  ch3: { endpoints: three, balance: { policy: 'consistent-hash', hashOn: { header: 'x-user' } } },
};

const upstream = (name: string): Upstream => ({
  id: `upstream/bench/${name}/0`,
  url: `http://127.0.0.1:${PORTS.upstream}`,
  timeouts: { connectMs: 5_000, responseMs: 60_000, idleMs: 60_000 },
  ...variants[name],
});
const route = (name: string): Route => ({
  id: `route/bench/${name}/items/0`,
  source: { kind: 'GatewayRoute', namespace: 'bench', name, generation: 1 },
  match: { path: { type: 'Prefix', value: `/${name}` } },
  stripPrefix: true,
  plugins: [],
  handler: { type: 'proxy', upstream: upstream(name).id },
});

// Two upstreams of the same address under two ids: the cost measured is the weighted pick's.
const backend = (i: number): Upstream => ({ ...upstream('url'), id: `upstream/bench/wb2/${i}` });
const weighted: Route = {
  ...route('wb2'),
  handler: {
    type: 'proxy',
    backends: [
      { upstream: backend(0).id, weight: 1 },
      { upstream: backend(1).id, weight: 1 },
    ],
  },
};

const pickOnly: Route = {
  ...route('wbs'),
  handler: {
    type: 'proxy',
    backends: [
      { upstream: upstream('url').id, weight: 1 },
      { upstream: upstream('url').id, weight: 1 },
    ],
  },
};

// The url route as a Gateway listener's (what an HTTPRoute on a hostname-less listener becomes).
const LISTENER = 'listener/bench/gw/http';
const onListener: Route = { ...route('gwl'), handler: route('url').handler, listeners: [LISTENER] };

const names = Object.keys(variants);
const table: RouteTable = {
  version: 1,
  routes: [...names.map(route), weighted, pickOnly, onListener],
  upstreams: [...names.map(upstream), backend(0), backend(1)],
  listeners: [{ id: LISTENER, port: listenerPort(Number(process.env.BENCH_PORT)), protocol: 'HTTP' }],
};

if (import.meta.main) {
  const dp = await startDataPlane({
    host: '127.0.0.1',
    proxyPort: Number(process.env.BENCH_PORT),
    adminHost: '127.0.0.1',
    adminPort: 0,
    accessLog: false,
    log: createLogger('warn'),
    initialSnapshot: { hash: tableHash(table), table },
  });
  process.on('SIGTERM', () => dp.close().then(() => process.exit(0)));
}
