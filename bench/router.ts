/**
 * Path matching alone: dataplane/runtime/router.ts's RouteMatcher (two Maps of literal paths)
 * against find-my-way used as the matcher used it before (a radix tree of the same literal paths,
 * "P" and "P/*" per Prefix route), measured in the same process: build time, heap retained, and
 * lookups (ns each) for paths at a route's own path, below it (3 segments deeper), and nowhere.
 *
 * Usage: node --expose-gc bench/router.ts [--routes 10000] [--lookups 1000000]
 */
import { parseArgs } from 'node:util';
import FindMyWay from 'find-my-way';
import type { RuntimeRoute } from '../dataplane/pipeline/route.ts';
import { RouteMatcher } from '../dataplane/runtime/router.ts';
import { fmt, table } from './lib/table.ts';

const { values: args } = parseArgs({
  options: { routes: { type: 'string', default: '10000' }, lookups: { type: 'string', default: '1000000' } },
});
const N = Number(args.routes);
const LOOKUPS = Number(args.lookups);
const gc = (globalThis as { gc?: () => void }).gc ?? (() => {});

// Half Prefix, half Exact, as the controller bench's routes ("/r-00001/a", "/r-00001/b").
const routes = Array.from({ length: N }, (_, i) => {
  const value = `/r-${String(i >> 1).padStart(5, '0')}/${i & 1 ? 'b' : 'a'}`;
  const type = i & 1 ? 'Exact' : 'Prefix';
  return {
    entry: { match: { path: { type, value } } },
    methods: null,
    hosts: null,
    headers: null,
    cookies: null,
    query: null,
  };
}) as unknown as RuntimeRoute[];

function fmwOf(rs: RuntimeRoute[]) {
  const router = FindMyWay({
    caseSensitive: true,
    ignoreTrailingSlash: false,
    ignoreDuplicateSlashes: false,
  });
  for (const r of rs) {
    const { type, value } = r.entry.match.path;
    router.on('GET', value, () => {}, r);
    if (type === 'Prefix') router.on('GET', `${value}/*`, () => {}, r);
  }
  return (path: string) => router.find('GET', path)?.store ?? null;
}

function measure(name: string, make: () => (path: string) => unknown) {
  gc();
  const before = process.memoryUsage().heapUsed;
  const t0 = performance.now();
  const find = make();
  const buildMs = performance.now() - t0;
  gc();
  const heapMB = (process.memoryUsage().heapUsed - before) / 1048576;
  const paths = {
    'own path': Array.from({ length: 1024 }, (_, i) => routes[(i * 7919) % N].entry.match.path.value),
    '3 below a prefix': Array.from(
      { length: 1024 },
      (_, i) => `${routes[((i * 7919) % N) & ~1].entry.match.path.value}/x/y/z`,
    ),
    nowhere: Array.from({ length: 1024 }, (_, i) => `/none-${i}/x`),
  };
  const ns: Record<string, number> = {};
  for (const [kind, list] of Object.entries(paths)) {
    let hits = 0;
    for (let i = 0; i < 100_000; i++) if (find(list[i & 1023]) !== null) hits++; // warm-up
    const t = process.hrtime.bigint();
    for (let i = 0; i < LOOKUPS; i++) if (find(list[i & 1023]) !== null) hits++;
    ns[kind] = Number(process.hrtime.bigint() - t) / LOOKUPS;
    if (hits === 0 && kind !== 'nowhere') throw new Error(`${name}: ${kind} found nothing`);
  }
  return { name, buildMs, heapMB, ns };
}

const matcher = measure('RouteMatcher (Maps)', () => {
  const m = new RouteMatcher(routes);
  return (path) => m.match(path, 'GET', 'h', {});
});
const baseline = measure('find-my-way (before)', () => fmwOf(routes));
console.log(`${N} route paths, ${LOOKUPS} lookups each`);
console.log(
  table(
    ['matcher', 'build', 'heap', 'own path', '3 below', 'nowhere'],
    [matcher, baseline].map((r) => [
      r.name,
      `${fmt(r.buildMs, 1)} ms`,
      `${fmt(r.heapMB, 1)} MB`,
      ...Object.values(r.ns).map((v) => `${fmt(v, 0)} ns`),
    ]),
  ),
);
