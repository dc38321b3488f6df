/**
 * Push: the controller's Publisher sending a snapshot to N data planes and waiting until every
 * one runs it. The data planes are real (startDataPlane: admin API, validateSnapshot,
 * buildRuntime, swap), N of them in this one process on loopback ports, so "50 pods" is
 * simulated by 50 servers sharing one core: a pessimistic figure next to 50 real pods on 50
 * machines. Snapshots of 100 and 1,000 routes (bench/compile.ts's generator); median of 5.
 *
 * Usage: node bench/push.ts [--pods 3,50] [--routes 100,1000] [--runs 5]
 */
import { parseArgs } from 'node:util';
import { build } from '../controller/build.ts';
import { Publisher } from '../controller/publish/publisher.ts';
import { resourceSetFrom } from '../controller/source/resource-set.ts';
import { type DataPlane, startDataPlane } from '../dataplane/main.ts';
import { createLogger } from '../dataplane/observability/log.ts';
import { generate } from './compile.ts';

const { values } = parseArgs({
  options: { pods: { type: 'string' }, routes: { type: 'string' }, runs: { type: 'string' } },
});
const podCounts = (values.pods ?? '3,50').split(',').map(Number);
const routeCounts = (values.routes ?? '100,1000').split(',').map(Number);
const runs = Number(values.runs ?? 5);
const TOKEN = 'bench-token';

async function planes(n: number): Promise<DataPlane[]> {
  const out: DataPlane[] = [];
  for (let i = 0; i < n; i++)
    out.push(
      await startDataPlane({
        host: '127.0.0.1',
        proxyPort: 0,
        adminHost: '127.0.0.1',
        adminPort: 0,
        adminToken: TOKEN,
        accessLog: false,
        log: createLogger('silent'),
      }),
    );
  return out;
}

/** Publishes and resolves with the ms until every pod reports the hash. */
function pushOnce(publisher: Publisher, pods: DataPlane[], snapshot: ReturnType<typeof build>['snapshot']) {
  return new Promise<number>((resolve) => {
    const start = performance.now();
    const check = () => {
      if (pods.every((p) => p.holder.hash === snapshot.hash)) {
        clearInterval(timer);
        resolve(performance.now() - start);
      }
    };
    const timer = setInterval(check, 1);
    publisher.publish(snapshot);
  });
}

const rows: string[] = [];
for (const routes of routeCounts) {
  // Two snapshots that differ, so every run is a real change; a trailing route alternates.
  const base = generate(routes);
  const snapshots = [
    build(resourceSetFrom(base)).snapshot,
    build(resourceSetFrom(generate(routes + 1))).snapshot,
  ];
  const bytes = Buffer.byteLength(JSON.stringify(snapshots[0]));
  for (const n of podCounts) {
    const pods = await planes(n);
    const publisher = new Publisher({ token: TOKEN, resyncMs: 3_600_000 });
    publisher.setPods(pods.map((p, i) => ({ key: p.adminUrl, name: `pod-${i}`, url: p.adminUrl })));
    publisher.setActive(true);
    await pushOnce(publisher, pods, snapshots[1]); // warm-up (JIT, connections)
    const times: number[] = [];
    for (let r = 0; r < runs; r++) times.push(await pushOnce(publisher, pods, snapshots[r % 2]));
    times.sort((a, b) => a - b);
    rows.push(
      `${String(routes).padStart(6)}  ${String((bytes / 1024).toFixed(0)).padStart(8)} KiB  ${String(n).padStart(4)}  ` +
        `${times[Math.floor(times.length / 2)].toFixed(0).padStart(9)}  ${times[0].toFixed(0).padStart(6)}–${times.at(-1)!.toFixed(0)}`,
    );
    publisher.stop();
    await Promise.all(pods.map((p) => p.close()));
  }
}
process.stdout.write(
  `\npush — Publisher → N data planes in this process (validate + buildRuntime + swap each), until all run the hash; median of ${runs}\n\n` +
    `routes  snapshot     pods  median ms  min–max\n${rows.join('\n')}\n`,
);
process.exit(0);
