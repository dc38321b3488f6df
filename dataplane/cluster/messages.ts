/**
 * What passes between the cluster primary and its workers over IPC. Every message carries
 * `sluice` (its kind), so anything else on the channel is ignored. A request the primary makes
 * (apply, metrics) carries an id that the worker's answer repeats.
 *
 *   worker → primary   hello                          the worker listens for messages: send start
 *   primary → worker   start {options, snapshot}      apply the snapshot (if any), then listen
 *   worker → primary   started {hash} | failed        serving / could not start (exits 1)
 *   primary → worker   apply {id, snapshot}           a snapshot the primary validated
 *   worker → primary   applied {id, outcome}
 *   primary → worker   metrics {id}
 *   worker → primary   metrics {id, metrics}          its registry as prom-client JSON
 *   primary → worker   purge {id, prefix}             DELETE /cache: drop its proxy-cache entries
 *   worker → primary   purged {id, count} | {id, error}
 *   primary → worker   stop                           drain (as on SIGTERM) and exit 0
 *   worker → primary   consumer {name}                may this consumer keep its analytics label?
 *   worker → primary   listeners {listeners}          its Gateway listener ports' state changed (GET /config)
 *   primary → worker   consumer {name, named, full}   the answer (consumer-names.ts)
 */
import type { Snapshot } from '../config/route-table.ts';
import type { DataPlaneOptions } from '../main.ts';
import type { ListenerState } from '../server/listener-ports.ts';
import type { ApplyResult } from '../runtime/holder.ts';

/** The options of one worker's data plane: plain data (no logger), sent once. */
export type WorkerOptions = Omit<
  DataPlaneOptions,
  'log' | 'initialSnapshot' | 'prevalidated' | 'admin' | 'askConsumer' | 'onListeners'
>;

export type ToWorker =
  | { sluice: 'start'; options: WorkerOptions; snapshot: Snapshot | null }
  | { sluice: 'apply'; id: number; snapshot: Snapshot }
  | { sluice: 'metrics'; id: number }
  | { sluice: 'purge'; id: number; prefix: string }
  | { sluice: 'consumer'; name: string; named: boolean; full: string[] | null }
  | { sluice: 'stop' };

export type FromWorker =
  | { sluice: 'hello' }
  | { sluice: 'started'; hash: string }
  | { sluice: 'failed'; message: string }
  | { sluice: 'applied'; id: number; outcome: ApplyResult }
  | { sluice: 'metrics'; id: number; metrics: object[] }
  | { sluice: 'purged'; id: number; count: number; error?: string }
  | { sluice: 'consumer'; name: string }
  | { sluice: 'listeners'; listeners: ListenerState[] };

export function isMessage<T extends { sluice: string }>(m: unknown): m is T {
  return typeof m === 'object' && m !== null && typeof (m as { sluice?: unknown }).sluice === 'string';
}
