/** The table bench/controller.ts prints (every figure also goes to bench/results/controller-*.json). */
import { fmt, table } from '../lib/table.ts';
import type { HeapSampler } from './probes.ts';

/** What a run measured (written as JSON too). */
export interface ControllerResult {
  routes: number;
  preset: string | undefined;
  entry: string;
  flags: { controller: string; dataplane: string };
  limitsMiB: { controller: number; dataplane: number };
  applySeconds: number;
  coldSeconds: number;
  editMs: { p50: number; p99: number; max: number | undefined; all: number[] };
  peakRssMiB: {
    controller: number;
    dataplanes: number[];
    atColdDone: { controller: number; dataplanes: number[] };
  };
  endRssMiB: { controller: number; dataplanes: number[] };
  peakHeapMiB: { controller: HeapSampler['peaks'][number]; dataplanes: HeapSampler['peaks'] };
  idle: { seconds: number; adminRequestsPerPodPerMinute: number[]; controllerCpuPercent: number };
  snapshotBytes: number;
  meanMs: { build: number; push: number };
}

export function printResult(
  result: ControllerResult,
  peaks: HeapSampler['peaks'],
  o: { hosts: string[]; concurrency: number; edits: number },
): void {
  const limitNote = (v: number, limit: number) =>
    `${fmt(v, 0)} MiB (${fmt((100 * v) / limit, 0)} % of ${limit}Mi)`;
  console.log(
    `\nsluice controller bench: ${result.routes} GatewayRoutes (2 paths each, one shared key-auth plugin), 2 data-plane pods, ` +
      `preset ${result.preset} (${result.entry}; controller ${result.flags.controller}; data plane ${result.flags.dataplane})\n`,
  );
  console.log(
    table(
      ['figure', 'value'],
      [
        ['apply (server-side, ' + o.concurrency + ' at a time)', `${fmt(result.applySeconds)} s`],
        ['cold: last apply → all Programmed on 2 of 2', `${fmt(result.coldSeconds)} s`],
        [
          `edit → Programmed p50 / p99 (${o.edits} edits)`,
          `${fmt(result.editMs.p50, 0)} / ${fmt(result.editMs.p99, 0)} ms`,
        ],
        ['controller peak RSS (VmHWM)', limitNote(result.peakRssMiB.controller, result.limitsMiB.controller)],
        ...result.peakRssMiB.dataplanes.map((v, i) => [
          `data plane ${o.hosts[i]} peak RSS`,
          limitNote(v, result.limitsMiB.dataplane),
        ]),
        ...peaks.map((p, i) => [
          `${i === 0 ? 'controller' : `data plane ${o.hosts[i - 1]}`} peak V8 heap used / total, external; RssAnon`,
          `${fmt(p.heapUsed, 0)} / ${fmt(p.heapTotal, 0)}, ${fmt(p.external, 0)}; ${fmt(p.rssAnon, 0)} MiB`,
        ]),
        [
          'idle admin requests / pod / min',
          result.idle.adminRequestsPerPodPerMinute.map((v) => fmt(v, 1)).join(', '),
        ],
        ['idle controller CPU', `${fmt(result.idle.controllerCpuPercent, 1)} % of a core`],
        ['snapshot', `${fmt(result.snapshotBytes / 1024 / 1024, 2)} MB`],
        [
          'mean build() / PUT /config (whole run)',
          `${fmt(result.meanMs.build, 0)} / ${fmt(result.meanMs.push, 0)} ms`,
        ],
      ],
    ),
  );
}
