/**
 * A data plane as a command sees it: one process (--workers 1, the default: no cluster, no
 * extra hop), or a cluster primary and its N workers. Either way: a logger, `apply` (what
 * SIGHUP and --watch call; the same path as PUT /config), `refused` (files that did not compile,
 * counted with the refused snapshots) and `close` (drain, then exit).
 */
import type { Logger } from 'pino';
import { startCluster } from '../../dataplane/cluster/primary.ts';
import { type DataPlaneOptions, startDataPlane } from '../../dataplane/main.ts';
import type { ApplyResult } from '../../dataplane/runtime/holder.ts';
import { failIn } from './command.ts';

export interface Serving {
  log: Logger;
  apply(snapshot: unknown): Promise<ApplyResult>;
  /** Counts a configuration refused before it became a snapshot (run's files, re-read), as apply counts a refused one. */
  refused(): void;
  close(): Promise<void>;
}

/** Starts it; a failure to start (a port in use, an invalid configuration) exits 1 naming the command. */
export async function serve(
  cmd: string,
  options: Partial<DataPlaneOptions>,
  workers: number,
): Promise<Serving> {
  const exit = (err: Error) => failIn(cmd, err.message, 1);
  if (workers > 1) return startCluster(options, workers).catch(exit);
  const dp = await startDataPlane(options).catch(exit);
  return {
    log: dp.log,
    apply: async (s) => dp.holder.apply(s),
    refused: () => dp.metrics.configLoads.labels('rejected').inc(),
    close: () => dp.close(),
  };
}
