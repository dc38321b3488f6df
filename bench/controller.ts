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
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Kube } from '../controller/source/kube.ts';
import { loadKubeAccess } from '../controller/source/kube-access.ts';
import { http, sleep, waitReady } from './lib/http.ts';
import { kapiAvailable, KAPI_DIR, startKapi } from './lib/kapi.ts';
import { kubeWriter } from './lib/kube.ts';
import { BENCH, IMAGE_ENV, NODE, ROOT, SLUICE_NODE_FLAGS } from './lib/machine.ts';
import { type Proc, start, stopAll, stopEverythingOnExit } from './lib/processes.ts';
import { fmt } from './lib/table.ts';

import { flagsText, type Sizing, sizing } from './controller/sizing.ts';
import {
  HeapSampler,
  adminRequests,
  cpuSeconds,
  kubectl,
  mib,
  pool,
  procStatusKiB,
  quantile,
} from './controller/probes.ts';
import {
  API_KEY,
  deleteBenchObjects,
  fixedObjects,
  gatewayRoute,
  HOSTS,
  NS,
  routeName,
  TOKEN,
} from './controller/objects.ts';
import { Tracker } from './controller/watch.ts';
import { type ControllerResult, printResult } from './controller/report.ts';

import { args, CONCURRENCY, EDITS, IDLE_S, N, TIMEOUT_MS } from './controller/options.ts';

const SIZE = sizing(args.preset!);

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
      env: { ...IMAGE_ENV, NODE_OPTIONS: `--max-old-space-size=${sz.heapMiB}` },
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

    const result: ControllerResult = {
      routes: N,
      preset: args.preset,
      entry: args.source ? 'bin/sluice.ts' : 'dist/bin/sluice.js',
      flags: { controller: flagsText(SIZE.controller), dataplane: flagsText(SIZE.dataplane) },
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
    printResult(result, sampler.peaks, { hosts: HOSTS, concurrency: CONCURRENCY, edits: EDITS });
    const dir = join(BENCH, 'results');
    mkdirSync(dir, { recursive: true });
    const file = join(dir, `controller-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
    writeFileSync(file, `${JSON.stringify(result, null, 2)}\n`);
    console.log(`\n(${file}; logs in ${work})`);
    tracker.informer.stop();
    return 0;
  } finally {
    await stopAll();
    if (args.kubeconfig && kubeconfig) deleteBenchObjects(kubeconfig);
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
