/**
 * The control plane at scale: the real `sluice controller` and two real `sluice dataplane`
 * processes (127.0.0.2 and 127.0.0.3, the same ports, as two pods would have), started with the
 * chart's Node flags for a values preset (--max-old-space-size from the memory limit and
 * heapPercent, as templates/_helpers.tpl derives it; the #! line's flags, as the image runs
 * them), against a private kapi (../shared/kapi; or --kubeconfig). N GatewayRoutes (two paths
 * each, all using one key-auth GatewayPlugin whose key is a secretKeyRef) are server-side
 * applied, then it measures:
 *
 * - cold: the last apply answered → every route Programmed ("Running on 2 of 2 pods.", at its
 *   generation), seen by a watch on the routes;
 * - edits: one route's path changed → that route Programmed at its new generation, p50/p99;
 * - peak RSS (VmHWM) of the controller and of each data plane, against the preset's limits;
 * - idle: requests each data plane answers on its admin port per minute while nothing changes
 *   (sluice_admin_requests_total, its own /metrics reads left out), and the controller's CPU.
 *
 * Usage: node bench/controller.ts [--routes 5000] [--edits 20] [--idle-seconds 30]
 *          [--preset small|default|production] [--kubeconfig FILE] [--concurrency 8] [--source]
 * Asserts nothing; exits 1 when something never got Programmed or a pod served the wrong thing.
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { parse } from 'yaml';
import { Informer, type KubeObject } from '../controller/source/informers.ts';
import { Kube } from '../controller/source/kube.ts';
import { loadKubeAccess } from '../controller/source/kube-access.ts';
import { http, sleep, waitReady } from './lib/http.ts';
import { kapiAvailable, KAPI_DIR, startKapi } from './lib/kapi.ts';
import { kubeWriter } from './lib/kube.ts';
import { BENCH, HZ, NODE, ROOT, SLUICE_NODE_FLAGS } from './lib/machine.ts';
import { type Proc, start, stopAll, stopEverythingOnExit } from './lib/processes.ts';
import { fmt, table } from './lib/table.ts';

const { values: args } = parseArgs({
  options: {
    routes: { type: 'string', default: '5000' },
    edits: { type: 'string', default: '20' },
    'idle-seconds': { type: 'string', default: '30' },
    preset: { type: 'string', default: 'small' },
    kubeconfig: { type: 'string' },
    concurrency: { type: 'string', default: '8' },
    source: { type: 'boolean', default: false },
    'timeout-seconds': { type: 'string', default: '600' },
    // Investigation: more Node flags (--trace-gc, --heap-prof, …); heap snapshots of the controller
    // (then the data planes) once everything is Programmed, written into the logs folder.
    'controller-node-flags': { type: 'string', default: '' },
    'dataplane-node-flags': { type: 'string', default: '' },
    'heap-snapshots': { type: 'boolean', default: false },
    help: { type: 'boolean', short: 'h' },
  },
});
if (args.help) {
  console.log(readFileSync(import.meta.filename, 'utf8').split('*/')[0]);
  process.exit(0);
}
const N = Number(args.routes);
const EDITS = Number(args.edits);
const IDLE_S = Number(args['idle-seconds']);
const CONCURRENCY = Number(args.concurrency);
const TIMEOUT_MS = Number(args['timeout-seconds']) * 1000;
const NS = `sluice-bench-${randomBytes(3).toString('hex')}`;
const TOKEN = 'bench-admin-token';
const HOSTS = ['127.0.0.2', '127.0.0.3'];
const API_KEY = 'bench-key-0123456789';

// ---------------------------------------------------------------------------------------------
// The chart's Node flags for a preset (the same arithmetic as sluice.nodeOptions in _helpers.tpl).

interface Sizing {
  limitMiB: number;
  heapMiB: number;
  /** SLUICE_NODE_FLAG, which the #! line passes after its own flags (the controller's young generation). */
  nodeFlag: string | null;
}
function mebibytes(q: string): number {
  const m = /^(\d+)(Mi|Gi)$/.exec(q);
  if (!m) throw new Error(`memory limit ${q}: only Mi and Gi are read here`);
  return Number(m[1]) * (m[2] === 'Gi' ? 1024 : 1);
}
function sizing(preset: string): { controller: Sizing; dataplane: Sizing } {
  const base = parse(readFileSync(join(ROOT, 'charts/sluice/values.yaml'), 'utf8'));
  const over = preset === 'default' ? {} : parse(readFileSync(join(ROOT, `helm/${preset}.yaml`), 'utf8'));
  const of = (role: 'controller' | 'dataplane', workers: number): Sizing => {
    const limit = over[role]?.resources?.limits?.memory ?? base[role].resources.limits.memory;
    const percent = over[role]?.heapPercent ?? base[role].heapPercent;
    const limitMiB = mebibytes(limit);
    const semi =
      role === 'controller' ? (over.controller?.semiSpaceMiB ?? base.controller.semiSpaceMiB) : null;
    return {
      limitMiB,
      heapMiB: Math.floor((limitMiB * percent) / (100 * workers)),
      nodeFlag: semi === null ? null : `--max-semi-space-size=${semi}`,
    };
  };
  return {
    controller: of('controller', 1),
    dataplane: of('dataplane', over.dataplane?.workers ?? base.dataplane.workers),
  };
}
const SIZE = sizing(args.preset!);

// ---------------------------------------------------------------------------------------------
// Processes: /proc figures.

function procStatusKiB(pid: number, field: 'VmHWM' | 'VmRSS'): number {
  const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) : Number.NaN;
}
const mib = (kib: number) => kib / 1024;
function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / HZ;
}

// ---------------------------------------------------------------------------------------------
// The objects.

const routeName = (i: number) => `r-${String(i).padStart(5, '0')}`;
function gatewayRoute(i: number, upstreamUrl: string, edit = 0) {
  const name = routeName(i);
  return {
    apiVersion: 'sluice.dev/v1alpha1',
    kind: 'GatewayRoute',
    metadata: { name, namespace: NS },
    spec: {
      service: { name, url: upstreamUrl },
      plugins: [{ name: 'api-key' }],
      routes: [{ name: 'main', paths: [`/${name}/a`, edit ? `/${name}/b${edit}` : `/${name}/b`] }],
    },
  };
}
const fixedObjects = (adminPort: number) => [
  {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'api-keys', namespace: NS },
    stringData: { bench: API_KEY },
  },
  {
    apiVersion: 'sluice.dev/v1alpha1',
    kind: 'GatewayPlugin',
    metadata: { name: 'api-key', namespace: NS },
    spec: {
      plugin: 'key-auth',
      config: { consumers: [{ name: 'bench', secretKeyRef: { name: 'api-keys', key: 'bench' } }] },
    },
  },
  {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: 'sluice-admin', namespace: NS },
    spec: { clusterIP: 'None', ports: [{ name: 'admin', port: adminPort }] },
  },
  // kapi runs no EndpointSlice controller: the bench writes the headless Service's slice itself.
  {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: {
      name: 'sluice-admin-bench',
      namespace: NS,
      labels: { 'kubernetes.io/service-name': 'sluice-admin' },
    },
    addressType: 'IPv4',
    ports: [{ name: 'admin', port: adminPort }],
    endpoints: HOSTS.map((h, i) => ({
      addresses: [h],
      conditions: { ready: true },
      targetRef: { kind: 'Pod', name: `dataplane-${i + 1}` },
    })),
  },
];

// ---------------------------------------------------------------------------------------------
// Watching Programmed.

interface RouteObject extends KubeObject {
  status?: { conditions?: { type: string; status: string; message: string; observedGeneration?: number }[] };
}
const PROGRAMMED = `Running on ${HOSTS.length} of ${HOSTS.length} pods.`;
function isProgrammed(o: RouteObject): boolean {
  const c = o.status?.conditions?.find((x) => x.type === 'Programmed');
  return (
    c !== undefined &&
    c.status === 'True' &&
    c.message === PROGRAMMED &&
    c.observedGeneration === o.metadata.generation
  );
}

/** Programmed routes by name, kept by a watch; `until` resolves when a predicate on it holds. */
class Tracker {
  readonly programmed = new Set<string>();
  readonly informer: Informer<RouteObject>;
  #waiters: { test: () => boolean; done: (t: number) => void }[] = [];

  constructor(kube: Kube) {
    this.informer = new Informer<RouteObject>(
      kube,
      `/apis/sluice.dev/v1alpha1/namespaces/${NS}/gatewayroutes`,
      (type, obj) => {
        if (type !== 'deleted' && isProgrammed(obj)) this.programmed.add(obj.metadata.name);
        else this.programmed.delete(obj.metadata.name);
        const now = performance.now();
        this.#waiters = this.#waiters.filter((w) => {
          if (!w.test()) return true;
          w.done(now);
          return false;
        });
      },
    );
  }

  until(what: string, test: () => boolean, timeoutMs: number): Promise<number> {
    if (test()) return Promise.resolve(performance.now());
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`timed out after ${timeoutMs} ms: ${what}`)),
        timeoutMs,
      );
      this.#waiters.push({
        test,
        done: (t) => {
          clearTimeout(timer);
          resolve(t);
        },
      });
    });
  }

  generation(name: string): number | undefined {
    return this.informer.cache.get(`${NS}/${name}`)?.metadata.generation;
  }
}

// ---------------------------------------------------------------------------------------------

const quantile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))];

async function pool<T>(items: T[], n: number, work: (item: T) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: n }, async () => {
      while (next < items.length) await work(items[next++]);
    }),
  );
}

function kubectl(kubeconfig: string, argv: string[]): void {
  const r = spawnSync('kubectl', argv, { env: { ...process.env, KUBECONFIG: kubeconfig }, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`kubectl ${argv.join(' ')}: ${r.stderr}`);
}

/** Requests each pod answered on its admin port, by route, its own /metrics reads left out. */
async function adminRequests(adminPort: number): Promise<number[]> {
  return Promise.all(
    HOSTS.map(async (h) => {
      const text = (await http('GET', `http://${h}:${adminPort}/metrics`, null)).body;
      let sum = 0;
      for (const m of text.matchAll(/^sluice_admin_requests_total\{([^}]*)\} (\d+)/gm))
        if (!m[1].includes('route="/metrics"')) sum += Number(m[2]);
      return sum;
    }),
  );
}

/**
 * The largest V8 heap (total and used) and external memory each process reported on its
 * /metrics (prom-client's nodejs_* gauges), polled every `ms`: where a peak RSS came from.
 */
class HeapSampler {
  readonly peaks: { heapTotal: number; heapUsed: number; external: number; rssAnon: number }[];
  readonly #timer: NodeJS.Timeout;
  /** pids: RssAnon (resident, not file-backed: what the kernel cannot drop under a memory limit) is sampled too. */
  constructor(urls: string[], pids: number[], ms = 500) {
    this.peaks = urls.map(() => ({ heapTotal: 0, heapUsed: 0, external: 0, rssAnon: 0 }));
    const gauge = (text: string, name: string) =>
      Number(new RegExp(`^${name} (\\S+)`, 'm').exec(text)?.[1] ?? 0) / 1024 / 1024;
    this.#timer = setInterval(() => {
      for (const [i, pid] of pids.entries())
        try {
          const kib = Number(/^RssAnon:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]);
          this.peaks[i].rssAnon = Math.max(this.peaks[i].rssAnon, kib / 1024);
        } catch {}
      for (const [i, url] of urls.entries())
        http('GET', url, null, { timeoutMs: 5_000 }).then(
          ({ body }) => {
            const p = this.peaks[i];
            p.heapTotal = Math.max(p.heapTotal, gauge(body, 'nodejs_heap_size_total_bytes'));
            p.heapUsed = Math.max(p.heapUsed, gauge(body, 'nodejs_heap_size_used_bytes'));
            p.external = Math.max(p.external, gauge(body, 'nodejs_external_memory_bytes'));
          },
          () => {},
        );
    }, ms);
  }
  stop(): void {
    clearInterval(this.#timer);
  }
}

const progress = (msg: string) =>
  process.stderr.write(`[controller bench ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);

async function main(): Promise<number> {
  let kubeconfig = args.kubeconfig;
  let stopKapi = () => {};
  if (!kubeconfig) {
    if (!kapiAvailable()) {
      console.log(
        `bench/controller.ts: skipped: no kapi at ${KAPI_DIR} (give --kubeconfig FILE for another API server)`,
      );
      return 0;
    }
    progress('starting a private kapi');
    const kapi = await startKapi();
    kubeconfig = kapi.kubeconfig;
    stopKapi = kapi.stop;
  }
  const work = mkdtempSync(join(tmpdir(), 'sluice-bench-ctl-'));
  const write = kubeWriter(kubeconfig);
  try {
    progress('applying the CRDs');
    kubectl(kubeconfig, ['apply', '--server-side', '--force-conflicts', '-f', join(ROOT, 'crds')]);
    kubectl(kubeconfig, [
      'wait',
      '--for=condition=Established',
      '--timeout=30s',
      'crd/gatewayroutes.sluice.dev',
    ]);
    await write.request('POST', '/api/v1/namespaces', {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: NS },
    });

    // The upstream: one answer for everything (the figures here are the control plane's).
    const upstream = createServer((_req, res) => res.end('{"ok":true}'));
    await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
    const upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
    upstream.unref();

    const [proxyPort, adminPort, metricsPort] = [18_400, 18_401, 18_402];
    const entry = args.source ? join(ROOT, 'bin/sluice.ts') : join(ROOT, 'dist/bin/sluice.js');
    if (!args.source) {
      const b = spawnSync('npm', ['run', '--silent', 'build'], { cwd: ROOT, stdio: 'inherit' });
      if (b.status !== 0) throw new Error('npm run build failed');
    }
    const snapshotFlags = args['heap-snapshots']
      ? ['--heapsnapshot-signal=SIGUSR2', `--diagnostic-dir=${work}`]
      : [];
    const nodeArgv = (sz: Sizing, more: string[]) => ({
      argv: [
        NODE,
        ...SLUICE_NODE_FLAGS,
        ...(sz.nodeFlag ? [sz.nodeFlag] : []),
        ...snapshotFlags,
        ...args[more[0] === 'controller' ? 'controller-node-flags' : 'dataplane-node-flags']!.split(
          ' ',
        ).filter(Boolean),
        entry,
        ...more,
      ],
      env: { NODE_OPTIONS: `--max-old-space-size=${sz.heapMiB}` },
    });
    progress('starting the data planes');
    const planes: Proc[] = [];
    for (const h of HOSTS) {
      const { argv, env } = nodeArgv(SIZE.dataplane, [
        'dataplane',
        ...['--host', h, '--port', String(proxyPort), '--admin-host', h, '--admin-port', String(adminPort)],
        ...['--admin-token', TOKEN, '--state-dir', mkdtempSync(join(work, 'state-'))],
        ...['--log-level', 'warn', '--no-access-log', '--drain-timeout-ms', '500'],
      ]);
      planes.push(start(`dataplane ${h}`, argv, join(work, `dataplane-${h}.log`), env));
    }
    for (const [i, p] of planes.entries()) await waitReady(p, `http://${HOSTS[i]}:${adminPort}/healthz`);
    for (const obj of fixedObjects(adminPort)) await write.apply(obj);

    const { argv, env } = nodeArgv(SIZE.controller, [
      'controller',
      ...['--dataplane-service', `${NS}/sluice-admin`, '--admin-token', TOKEN],
      ...['--metrics-host', '127.0.0.1', '--metrics-port', String(metricsPort)],
      ...['--lease-namespace', NS, '--lease-name', 'sluice-bench', '--identity', 'bench'],
      ...['--watch-namespaces', NS, '--log-level', 'warn'],
    ]);
    progress(`data planes ready; starting the controller (logs in ${work})`);
    const controller = start('controller', argv, join(work, 'controller.log'), {
      ...env,
      KUBECONFIG: kubeconfig,
    });
    await waitReady(controller, `http://127.0.0.1:${metricsPort}/readyz`, 60_000);

    const sampler = new HeapSampler(
      [`http://127.0.0.1:${metricsPort}/metrics`, ...HOSTS.map((h) => `http://${h}:${adminPort}/metrics`)],
      [controller, ...planes].map((p) => p.child.pid!),
    );
    const tracker = new Tracker(new Kube(loadKubeAccess({ KUBECONFIG: kubeconfig })));
    tracker.informer.start();
    await tracker.informer.synced;

    // Cold: N routes applied, C at a time.
    progress(`applying ${N} GatewayRoutes, ${CONCURRENCY} at a time`);
    const applyStart = performance.now();
    const indexes = Array.from({ length: N }, (_, i) => i);
    await pool(indexes, CONCURRENCY, (i) => write.apply(gatewayRoute(i, upstreamUrl)));
    const applied = performance.now();
    const allProgrammed = await tracker.until(
      `${N} routes Programmed`,
      () => tracker.programmed.size === N,
      TIMEOUT_MS,
    );
    const coldMs = allProgrammed - applied;
    progress(
      `applied in ${fmt((applied - applyStart) / 1000)} s; all Programmed ${fmt(coldMs / 1000)} s after the last`,
    );
    const hwmCold = [controller, ...planes].map((p) => procStatusKiB(p.child.pid!, 'VmHWM'));

    if (args['heap-snapshots'])
      for (const p of [controller, ...planes]) {
        process.kill(p.child.pid!, 'SIGUSR2');
        await sleep(15_000);
      }

    // Every pod serves a route with the key, and refuses it without.
    const check = async (path: string) => {
      for (const h of HOSTS) {
        const ok = await http('GET', `http://${h}:${proxyPort}${path}`, null, {
          headers: { 'x-api-key': API_KEY },
        });
        const no = await http('GET', `http://${h}:${proxyPort}${path}`, null);
        if (ok.status !== 200 || no.status !== 401)
          throw new Error(`${h}${path}: ${ok.status} with the key, ${no.status} without (want 200, 401)`);
      }
    };
    await check(`/${routeName(N - 1)}/b`);

    // Edits: one route at a time, its second path renamed.
    const edits: number[] = [];
    for (let k = 1; k <= EDITS; k++) {
      const i = Math.floor(((k - 1) * N) / EDITS + N / (2 * EDITS)) % N;
      const name = routeName(i);
      const t0 = performance.now();
      const written = (await write.apply(gatewayRoute(i, upstreamUrl, k))) as {
        metadata: { generation: number };
      };
      const generation = written.metadata.generation;
      const t1 = await tracker.until(
        `${name} Programmed at generation ${generation}`,
        () => tracker.generation(name) === generation && tracker.programmed.has(name),
        30_000,
      );
      edits.push(t1 - t0);
      await check(`/${name}/b${k}`);
      await sleep(200);
    }
    edits.sort((a, b) => a - b);

    // Idle: nothing changes; what do the pods and the controller do?
    progress(`${EDITS} edits done; idle for ${IDLE_S} s`);
    await sleep(Math.min(3_000, (IDLE_S * 1000) / 2));
    const before = await adminRequests(adminPort);
    const cpu0 = cpuSeconds(controller.child.pid!);
    await sleep(IDLE_S * 1000);
    const after = await adminRequests(adminPort);
    const idleCpu = (cpuSeconds(controller.child.pid!) - cpu0) / IDLE_S;
    const perMinute = after.map((a, i) => ((a - before[i]) * 60) / IDLE_S);

    const hwm = [controller, ...planes].map((p) => procStatusKiB(p.child.pid!, 'VmHWM'));
    sampler.stop();
    const rss = [controller, ...planes].map((p) => procStatusKiB(p.child.pid!, 'VmRSS'));
    const ctlMetrics = (await http('GET', `http://127.0.0.1:${metricsPort}/metrics`, null)).body;
    const sample = (name: string) => Number(new RegExp(`^${name} (\\S+)`, 'm').exec(ctlMetrics)?.[1]);
    const snapshotBytes = sample('sluice_controller_snapshot_bytes');
    // Where an edit's time goes: the controller's build() and its PUT /config (the pod's parse, validation, buildRuntime).
    const meanMs = (h: string) => (1000 * sample(`${h}_sum`)) / sample(`${h}_count`);
    const buildMs = meanMs('sluice_controller_build_seconds');
    const pushMs = meanMs('sluice_controller_push_seconds');

    const result = {
      routes: N,
      preset: args.preset,
      entry: args.source ? 'bin/sluice.ts' : 'dist/bin/sluice.js',
      flags: {
        controller:
          `${SLUICE_NODE_FLAGS.join(' ')} ${SIZE.controller.nodeFlag ?? ''} --max-old-space-size=${SIZE.controller.heapMiB}`.replace(
            '  ',
            ' ',
          ),
        dataplane: `${SLUICE_NODE_FLAGS.join(' ')} --max-old-space-size=${SIZE.dataplane.heapMiB}`,
      },
      limitsMiB: { controller: SIZE.controller.limitMiB, dataplane: SIZE.dataplane.limitMiB },
      applySeconds: (applied - applyStart) / 1000,
      coldSeconds: coldMs / 1000,
      editMs: { p50: quantile(edits, 0.5), p99: quantile(edits, 0.99), max: edits.at(-1), all: edits },
      peakRssMiB: {
        controller: mib(hwm[0]),
        dataplanes: hwm.slice(1).map(mib),
        atColdDone: { controller: mib(hwmCold[0]), dataplanes: hwmCold.slice(1).map(mib) },
      },
      endRssMiB: { controller: mib(rss[0]), dataplanes: rss.slice(1).map(mib) },
      peakHeapMiB: { controller: sampler.peaks[0], dataplanes: sampler.peaks.slice(1) },
      idle: { seconds: IDLE_S, adminRequestsPerPodPerMinute: perMinute, controllerCpuPercent: idleCpu * 100 },
      snapshotBytes,
      meanMs: { build: buildMs, push: pushMs },
    };
    const limitNote = (v: number, limit: number) =>
      `${fmt(v, 0)} MiB (${fmt((100 * v) / limit, 0)} % of ${limit}Mi)`;
    console.log(
      `\nsluice controller bench: ${N} GatewayRoutes (2 paths each, one shared key-auth plugin), 2 data-plane pods, ` +
        `preset ${args.preset} (${result.entry}; controller ${result.flags.controller}; data plane ${result.flags.dataplane})\n`,
    );
    console.log(
      table(
        ['figure', 'value'],
        [
          ['apply (server-side, ' + CONCURRENCY + ' at a time)', `${fmt(result.applySeconds)} s`],
          ['cold: last apply → all Programmed on 2 of 2', `${fmt(result.coldSeconds)} s`],
          [
            `edit → Programmed p50 / p99 (${EDITS} edits)`,
            `${fmt(result.editMs.p50, 0)} / ${fmt(result.editMs.p99, 0)} ms`,
          ],
          ['controller peak RSS (VmHWM)', limitNote(result.peakRssMiB.controller, SIZE.controller.limitMiB)],
          ...result.peakRssMiB.dataplanes.map((v, i) => [
            `data plane ${HOSTS[i]} peak RSS`,
            limitNote(v, SIZE.dataplane.limitMiB),
          ]),
          ...sampler.peaks.map((p, i) => [
            `${i === 0 ? 'controller' : `data plane ${HOSTS[i - 1]}`} peak V8 heap used / total, external; RssAnon`,
            `${fmt(p.heapUsed, 0)} / ${fmt(p.heapTotal, 0)}, ${fmt(p.external, 0)}; ${fmt(p.rssAnon, 0)} MiB`,
          ]),
          ['idle admin requests / pod / min', perMinute.map((v) => fmt(v, 1)).join(', ')],
          ['idle controller CPU', `${fmt(result.idle.controllerCpuPercent, 1)} % of a core`],
          ['snapshot', `${fmt(snapshotBytes / 1024 / 1024, 2)} MB`],
          ['mean build() / PUT /config (whole run)', `${fmt(buildMs, 0)} / ${fmt(pushMs, 0)} ms`],
        ],
      ),
    );
    const dir = join(BENCH, 'results');
    mkdirSync(dir, { recursive: true });
    const file = join(dir, `controller-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
    writeFileSync(file, `${JSON.stringify(result, null, 2)}\n`);
    console.log(`\n(${file}; logs in ${work})`);
    tracker.informer.stop();
    return 0;
  } finally {
    await stopAll();
    // Another API server's objects go (kapi, like some test clusters, has no garbage collector).
    if (args.kubeconfig)
      for (const what of ['gatewayroutes,gatewayplugins,secrets,services,endpointslices,leases', NS])
        spawnSync(
          'kubectl',
          what === NS ? ['delete', 'namespace', NS] : ['delete', what, '--all', '-n', NS],
          {
            env: { ...process.env, KUBECONFIG: kubeconfig },
            stdio: 'ignore',
          },
        );
    stopKapi();
  }
}

stopEverythingOnExit();
main().then(
  (code) => process.exit(code),
  (err: Error) => {
    console.error(`bench/controller.ts: ${err.message}`);
    stopAll().finally(() => process.exit(1));
  },
);
