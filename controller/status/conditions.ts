/**
 * The conditions an object should show, from what build() found (Accepted, ResolvedRefs) and
 * what the data-plane pods run (Programmed). Pure. Programmed is True only when every pod in
 * the EndpointSlices has acknowledged a snapshot built from this generation of the object:
 * "N of M pods" says how far along a rollout is, and names the pods that fail to answer and
 * why ("1 of 2 pods; 10.0.0.5: connection refused"); a pod's refusal (422) names the fields
 * that made it refuse. A pod that stops answering keeps what it acknowledged: objects it
 * already ran stay as they are, only changed ones wait for it.
 */
import type { TableError } from '../../dataplane/config/validate.ts';
import type { ComputedCondition, ObjectStatus } from '../build.ts';

export interface PodView {
  name: string;
  /** Hash the pod runs ('' none, null unknown). */
  hash: string | null;
  rejected: { hash: string; errors: TableError[] } | null;
  /** Why the last attempt to reach it failed; null while it answers. */
  error?: string | null;
  /** Failing for longer than the controller lets pass as a hiccup. */
  failingLong?: boolean;
}

/** The Programmed condition an object shows now, as some leader wrote it. */
export interface WrittenCondition {
  status: string;
  observedGeneration?: number;
  reason?: string;
  message?: string;
}

/** For each snapshot hash the controller built: the generation of each object in it ("Kind/ns/name" → generation). */
export type Generations = ReadonlyMap<string, ReadonlyMap<string, number>>;

const MAX_MESSAGE = 1024;

/** What Programmed is judged from: an object's generation and its other conditions. */
export type Judged = Pick<ObjectStatus, 'observedGeneration'> & { conditions: readonly ComputedCondition[] };

export function programmed(
  key: string,
  status: Judged,
  desiredHash: string,
  pods: readonly PodView[],
  generations: Generations,
  written?: WrittenCondition,
  /** Why the desired snapshot is not pushed at all (too large); null when it is. */
  notPushed: string | null = null,
): ComputedCondition {
  const observedGeneration = status.observedGeneration;
  const base = { type: 'Programmed', observedGeneration } as const;
  const broken = status.conditions.find((c) => c.status !== 'True');
  if (broken)
    return {
      ...base,
      status: 'False',
      reason: 'Invalid',
      message: `Not programmed: ${broken.type} is False.`,
    };
  const refusal = pods.find((p) => p.rejected?.hash === desiredHash);
  if (refusal) {
    const mine = refusal.rejected!.errors.filter((e) => e.id === undefined || ownerOf(e.id) === key);
    if (mine.length) {
      const what = mine
        .slice(0, 3)
        .map((e) => `${e.id ?? 'table'} ${e.field}: ${e.message}`)
        .join('; ');
      return {
        ...base,
        status: 'False',
        reason: 'Rejected',
        message: clip(`Pod ${refusal.name} refused it: ${what}`),
      };
    }
  }
  if (pods.length === 0)
    return {
      ...base,
      status: 'False',
      reason: 'NoDataPlane',
      message: 'No data-plane pod found (0 of 0 pods).',
    };
  const runs = (p: PodView) => p.hash !== null && generations.get(p.hash)?.get(key) === observedGeneration;
  const ready = pods.filter(runs).length;
  // A new leader that cannot reach a pod does not know what it runs: what the last leader
  // wrote stands for this generation, rather than turning every object Pending on takeover.
  const unknown = pods.filter((p) => p.hash === null).length;
  if (
    unknown > 0 &&
    ready + unknown === pods.length &&
    written?.status === 'True' &&
    written.observedGeneration === observedGeneration
  )
    return { ...base, status: 'True', reason: 'Programmed', message: written.message ?? '' };
  const counts = `${ready} of ${pods.length} pods`;
  if (ready === pods.length)
    return { ...base, status: 'True', reason: 'Programmed', message: `Running on ${counts}.` };
  // Objects the pods already run are not touched by a snapshot that cannot be pushed; the others wait for a fix.
  if (notPushed !== null)
    return {
      ...base,
      status: 'False',
      reason: 'SnapshotTooLarge',
      message: clip(`Running on ${counts}; not pushed: ${notPushed}.`),
    };
  const failing = pods.filter((p) => !runs(p) && p.error);
  const why = failing
    .slice(0, 3)
    .map((p) => `; ${p.name}: ${p.error}`)
    .join('');
  // Waiting on pods is progress (Pending); waiting on a pod that has failed for long is a fault.
  const reason = failing.some((p) => p.failingLong) ? 'PodFailing' : 'Pending';
  return { ...base, status: 'False', reason, message: clip(`Running on ${counts}${why}.`) };
}

/**
 * route/<ns>/<GatewayRoute>/… and upstream ids belong to a GatewayRoute; plugin/<ns>/<name> to a
 * GatewayPlugin; listener/<ns>/<Gateway>/<listener> to a Gateway.
 */
export function ownerOf(id: string): string | null {
  const [kind, ns, name] = id.split('/');
  if (kind === 'route' && ns && name) return `GatewayRoute/${ns}/${name}`;
  if (kind === 'plugin' && ns && name) return `GatewayPlugin/${ns}/${name}`;
  if (kind === 'listener' && ns && name) return `Gateway/${ns}/${name}`;
  return null;
}

const clip = (s: string) => (s.length > MAX_MESSAGE ? `${s.slice(0, MAX_MESSAGE - 1)}…` : s);
