/**
 * The configuration path at scale: N generated GatewayRoutes (1–2 paths each, some method,
 * host and header matches, some references to shared GatewayPlugins) through the controller's
 * build() (validate → compile → snapshot), then through what the data plane does with a pushed
 * snapshot: validateSnapshot() at the door and buildRuntime() (a fresh PoolRegistry each time).
 * Each figure is the median of 5 timed runs after one untimed run (fewer for a step that takes
 * seconds: see time()). Baseline, measured in the same process: a JSON round-trip of the same
 * input objects (×json), so the figures read the same on a slower or a faster machine; and per
 * route, 10,000 against 1,000 (1.0× = linear).
 *
 * Usage: node bench/compile.ts [--sizes 1000,10000] [--runs 5] [--out FILE.json]
 * (run by `make bench` after the proxy runs; alone, it writes bench/results/compile-<stamp>.json).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type { GatewayPlugin, GatewayRoute, Resource } from '../controller/api/index.ts';
import { build } from '../controller/build.ts';
import { resourceSetFrom } from '../controller/source/resource-set.ts';
import { validateSnapshot } from '../dataplane/config/validate.ts';
import { createLogger } from '../dataplane/observability/log.ts';
import { Metrics } from '../dataplane/observability/metrics.ts';
import { buildRuntime } from '../dataplane/runtime/build-runtime.ts';
import type { RuntimeDeps } from '../dataplane/pipeline/route.ts';
import { Background } from '../dataplane/pipeline/background.ts';
import { Stores } from '../dataplane/stores/open-stores.ts';
import { PoolRegistry } from '../dataplane/upstream/pools.ts';
import { median } from './lib/stats.ts';

const NS = 'bench';

/** Two GatewayPlugins shared by many routes: one at service scope, one overriding it at route scope. */
function plugins(): GatewayPlugin[] {
  const plugin = (name: string, config: Record<string, unknown>): GatewayPlugin => ({
    apiVersion: 'sluice.dev/v1alpha1',
    kind: 'GatewayPlugin',
    metadata: { name, namespace: NS },
    spec: { plugin: 'request-transformer', requestTransformer: config },
  });
  return [
    plugin('gateway-version', { add: { headers: ['X-Gateway-Version:v1'] } }),
    plugin('strip-debug', { remove: { headers: ['X-Debug'] }, add: { headers: ['X-Gateway-Version:v1'] } }),
  ];
}

/** Route i: one service, one route rule, every 2nd with a second path, variety from i. */
function route(i: number): GatewayRoute {
  const name = `svc-${String(i).padStart(5, '0')}`;
  const paths = i % 2 === 0 ? [`/${name}/api`, `/${name}/v2`] : [`/${name}/api`];
  return {
    apiVersion: 'sluice.dev/v1alpha1',
    kind: 'GatewayRoute',
    metadata: { name, namespace: NS, generation: 1 + (i % 3) },
    spec: {
      service: {
        name,
        url: `http://${name}.${NS}.svc.cluster.local:8080${i % 3 === 0 ? '/v1' : ''}`,
        ...(i % 5 === 0 ? { timeouts: { connect: '2s', response: '30s' } } : {}),
      },
      ...(i % 4 === 0 ? { plugins: [{ name: 'gateway-version' }] } : {}),
      routes: [
        {
          name: 'main',
          paths,
          ...(i % 3 === 0 ? { methods: ['GET', 'POST'] as ('GET' | 'POST')[] } : {}),
          ...(i % 7 === 0 ? { hosts: [`${name}.example.com`, '*.example.org'] } : {}),
          ...(i % 5 === 0 ? { headers: [{ name: 'X-Tenant', value: `tenant-${i % 11}` }] } : {}),
          ...(i % 4 === 1 ? { stripPrefix: true } : {}),
          ...(i % 10 === 0 ? { plugins: [{ name: 'strip-debug' }] } : {}),
        },
      ],
    },
  };
}

export function generate(n: number): Resource[] {
  return [...plugins(), ...Array.from({ length: n }, (_, i) => route(i))];
}

/**
 * One untimed run, then up to `runs` timed ones: median, min, max in ms. A step slower than
 * SLOW_MS needs no JIT warm-up: its first run counts, and timed runs stop once BUDGET_MS is
 * spent (at least one), so a quadratic step at 10,000 routes does not take minutes.
 */
const SLOW_MS = 2_000;
const BUDGET_MS = 15_000;
async function time(runs: number, fn: () => unknown, after?: () => Promise<unknown>) {
  const once = async () => {
    const t0 = performance.now();
    fn();
    const ms = performance.now() - t0;
    await after?.();
    return ms;
  };
  const all: number[] = [];
  const first = await once();
  if (first > SLOW_MS) all.push(first);
  let spent = first;
  while (all.length < runs && (all.length === 0 || spent < BUDGET_MS)) {
    const ms = await once();
    all.push(ms);
    spent += ms;
  }
  return { medianMs: median(all), minMs: Math.min(...all), maxMs: Math.max(...all), runsMs: all };
}

export interface CompileResult {
  routes: number;
  tableRoutes: number;
  upstreams: number;
  diagnostics: number;
  snapshotBytes: number;
  jsonRoundTrip: Awaited<ReturnType<typeof time>>;
  build: Awaited<ReturnType<typeof time>>;
  validateSnapshot: Awaited<ReturnType<typeof time>>;
  buildRuntime: Awaited<ReturnType<typeof time>>;
}

export async function benchCompile(n: number, runs: number): Promise<CompileResult> {
  const objects = generate(n);
  const resources = resourceSetFrom(objects);
  const first = build(resources);
  if (first.diagnostics.length) {
    process.stderr.write(
      `compile: ${n} routes gave ${first.diagnostics.length} diagnostics (the generator should give none), e.g.\n` +
        first.diagnostics
          .slice(0, 3)
          .map((d) => `  ${JSON.stringify(d)}\n`)
          .join(''),
    );
  }
  const snapshot = first.snapshot;
  const errors = validateSnapshot(snapshot);
  if (errors.length)
    throw new Error(
      `the data plane rejects the snapshot of ${n} routes: ${JSON.stringify(errors.slice(0, 3))}`,
    );

  const deps: RuntimeDeps = {
    log: createLogger('silent'),
    metrics: new Metrics({ processMetrics: false }),
    limits: { maxBodyBytes: 10 * 1024 * 1024, replicasHint: 1 },
    accessLog: false,
    stores: new Stores(),
    background: new Background(),
  };
  let pools = new PoolRegistry();
  return {
    routes: n,
    tableRoutes: snapshot.table.routes.length,
    upstreams: snapshot.table.upstreams.length,
    diagnostics: first.diagnostics.length,
    snapshotBytes: Buffer.byteLength(JSON.stringify(snapshot)),
    jsonRoundTrip: await time(runs, () => JSON.parse(JSON.stringify(objects))),
    build: await time(runs, () => build(resourceSetFrom(objects))),
    validateSnapshot: await time(runs, () => validateSnapshot(snapshot)),
    buildRuntime: await time(
      runs,
      () => buildRuntime(snapshot.hash, snapshot.table, pools, deps),
      async () => {
        await pools.closeAll();
        pools = new PoolRegistry();
      },
    ),
  };
}

function fmt(n: number, digits = 1): string {
  return Number.isFinite(n) ? n.toFixed(digits) : '-';
}

export function compileReport(results: CompileResult[], runs: number): string {
  const header = [
    'routes',
    'build ms',
    'µs/route',
    '×json',
    'snapshot bytes',
    'validateSnapshot ms',
    'buildRuntime ms',
    'µs/route',
    '×json',
    'json round-trip ms',
  ];
  const rows = results.map((r) => {
    const json = r.jsonRoundTrip.medianMs;
    const range = (t: CompileResult['build']) =>
      t.runsMs.length === 1
        ? `${fmt(t.medianMs)} (1 run)`
        : `${fmt(t.medianMs)} (${fmt(t.minMs)}–${fmt(t.maxMs)})`;
    return [
      String(r.routes),
      range(r.build),
      fmt((r.build.medianMs * 1000) / r.routes),
      `${fmt(r.build.medianMs / json, 1)}×`,
      String(r.snapshotBytes),
      range(r.validateSnapshot),
      range(r.buildRuntime),
      fmt((r.buildRuntime.medianMs * 1000) / r.routes),
      `${fmt(r.buildRuntime.medianMs / json, 1)}×`,
      fmt(json, 2),
    ];
  });
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (cells: string[]) => cells.map((c, i) => c.padStart(widths[i])).join('  ');
  const out = [
    `compile — GatewayRoutes through build() (controller) and validateSnapshot() + buildRuntime() (data plane); median of ${runs} runs (min–max), fewer for a step slower than ${SLOW_MS / 1000} s`,
    '',
    line(header),
    widths.map((w) => '-'.repeat(w)).join('  '),
    ...rows.map(line),
  ];
  const small = results[0];
  const big = results[results.length - 1];
  if (results.length > 1 && big.routes > small.routes) {
    const per = (r: CompileResult, t: 'build' | 'buildRuntime') => r[t].medianMs / r.routes;
    out.push(
      '',
      `per route, ${big.routes} vs ${small.routes}: build ${fmt(per(big, 'build') / per(small, 'build'), 2)}×, ` +
        `buildRuntime ${fmt(per(big, 'buildRuntime') / per(small, 'buildRuntime'), 2)}× (1.0× = linear)`,
    );
  }
  out.push(
    `×json: time / a JSON.stringify+parse round-trip of the same input objects, in this process. ` +
      `Diagnostics: ${results.map((r) => `${r.routes}: ${r.diagnostics}`).join(', ')} (expected 0).`,
  );
  return out.join('\n');
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { sizes: { type: 'string' }, runs: { type: 'string' }, out: { type: 'string' } },
  });
  const sizes = (values.sizes ?? '1000,10000').split(',').map(Number);
  const runs = Number(values.runs ?? 5);
  if (sizes.some((n) => !Number.isInteger(n) || n < 1) || !Number.isInteger(runs) || runs < 1)
    throw new Error('--sizes: whole numbers, comma-separated; --runs: a whole number');
  const results: CompileResult[] = [];
  for (const n of sizes) {
    process.stderr.write(`compile: ${n} routes…\n`);
    results.push(await benchCompile(n, runs));
  }
  process.stdout.write(`${compileReport(results, runs)}\n`);
  const json = `${JSON.stringify({ node: process.version, runs, results }, null, 2)}\n`;
  if (values.out) writeFileSync(values.out, json);
  else {
    const dir = join(dirname(fileURLToPath(import.meta.url)), 'results');
    mkdirSync(dir, { recursive: true });
    const file = join(dir, `compile-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
    writeFileSync(file, json);
    process.stdout.write(`results: ${file}\n`);
  }
}

if (import.meta.main) {
  main().catch((err: Error) => {
    process.stderr.write(`compile: ${err.stack ?? err.message}\n`);
    process.exit(1);
  });
}
