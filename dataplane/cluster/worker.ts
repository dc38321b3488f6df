/**
 * A cluster worker: one data plane on the proxy port it shares with its siblings (node:cluster
 * hands it connections), without an admin port or a state dir: the primary owns both. It takes
 * its options and the current snapshot from the primary before it listens, so it never serves
 * without the configuration its siblings run; later snapshots come validated (applyValid).
 * SIGTERM/SIGINT, the primary's stop, or losing the primary: drain like a single process, exit.
 */
import cluster from 'node:cluster';
import { type DataPlane, startDataPlane } from '../main.ts';
import { createLogger } from '../observability/log.ts';
import { type FromWorker, isMessage, type ToWorker } from './messages.ts';

export function runWorker(): void {
  let dp: DataPlane | null = null;
  let stopping = false;
  const send = (m: FromWorker) => {
    if (process.connected) process.send?.(m);
  };
  const stop = () => {
    if (stopping) return;
    stopping = true;
    (dp?.close() ?? Promise.resolve()).then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };

  process.on('message', async (m: unknown) => {
    if (!isMessage<ToWorker>(m) || stopping) return;
    switch (m.sluice) {
      case 'start': {
        const log = createLogger(m.options.logLevel).child({ worker: cluster.worker?.id, pid: process.pid });
        try {
          dp = await startDataPlane({
            ...m.options,
            stateDir: null,
            admin: false,
            log,
            // The pod's consumer analytics names are the primary's (consumer-names.ts).
            askConsumer: (name) => send({ sluice: 'consumer', name }),
            onListeners: (listeners) => send({ sluice: 'listeners', listeners }),
            ...(m.snapshot && { initialSnapshot: m.snapshot, prevalidated: true }),
          });
        } catch (err) {
          send({ sluice: 'failed', message: (err as Error).message });
          process.exit(1);
        }
        send({ sluice: 'started', hash: dp.holder.hash });
        return;
      }
      case 'apply':
        if (dp) send({ sluice: 'applied', id: m.id, outcome: dp.holder.applyValid(m.snapshot) });
        return;
      case 'metrics':
        if (dp) send({ sluice: 'metrics', id: m.id, metrics: await dp.metrics.registry.getMetricsAsJSON() });
        return;
      case 'purge':
        if (dp)
          dp.stores.purge(m.prefix).then(
            (count) => send({ sluice: 'purged', id: m.id, count }),
            (err: Error) => send({ sluice: 'purged', id: m.id, count: 0, error: err.message }),
          );
        return;
      case 'consumer':
        dp?.metrics.consumers?.decided(m.name, m.named, m.full);
        return;
      case 'stop':
        stop();
        return;
    }
  });
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  process.on('disconnect', stop);
  send({ sluice: 'hello' });
}
