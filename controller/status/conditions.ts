/**
 * The conditions an object should show, from what build() found (Accepted, ResolvedRefs) and
 * what the data-plane pods run (Programmed). Pure. Programmed is True only when every live pod
 * runs a snapshot built from this generation of the object: "N of M pods" says how far along
 * a rollout is; a pod's refusal (422) names the fields that made it refuse.
 */
import type { TableError } from '../../dataplane/config/validate.ts';
import type { ComputedCondition, ObjectStatus } from '../build.ts';

export interface PodView {
  name: string;
  /** Hash the pod runs ('' none, null unknown). */
  hash: string | null;
  rejected: { hash: string; errors: TableError[] } | null;
}

/** For each snapshot hash the controller built: the generation of each object in it ("Kind/ns/name" → generation). */
export type Generations = ReadonlyMap<string, ReadonlyMap<string, number>>;

const MAX_MESSAGE = 1024;

export function programmed(
  key: string,
  status: ObjectStatus,
  desiredHash: string,
  pods: readonly PodView[],
  generations: Generations,
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
  const ready = pods.filter(
    (p) => p.hash !== null && generations.get(p.hash)?.get(key) === observedGeneration,
  ).length;
  const counts = `${ready} of ${pods.length} pods`;
  return ready === pods.length
    ? { ...base, status: 'True', reason: 'Programmed', message: `Running on ${counts}.` }
    : { ...base, status: 'False', reason: 'Pending', message: `Running on ${counts}.` };
}

/** route/<ns>/<GatewayRoute>/… and upstream ids belong to a GatewayRoute; plugin/<ns>/<name> to a GatewayPlugin. */
export function ownerOf(id: string): string | null {
  const [kind, ns, name] = id.split('/');
  if (kind === 'route' && ns && name) return `GatewayRoute/${ns}/${name}`;
  if (kind === 'plugin' && ns && name) return `GatewayPlugin/${ns}/${name}`;
  return null;
}

const clip = (s: string) => (s.length > MAX_MESSAGE ? `${s.slice(0, MAX_MESSAGE - 1)}…` : s);
