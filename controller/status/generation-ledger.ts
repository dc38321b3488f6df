/**
 * Which generation of each object a snapshot hash stands for, so that Programmed can say
 * whether the pods run this generation. One table can come from different object sets (a
 * GatewayPlugin no route uses does not change it), so every build adds to the entry of its
 * hash; only the newest `kept` hashes are remembered.
 */
import type { BuildResult } from '../build.ts';
import {
  type Generations,
  type Judged,
  type PodView,
  programmed,
  type WrittenCondition,
} from './conditions.ts';
import type { Wanted } from './status-writer.ts';

/** A build as the ledger reads it: its snapshot's hash and its objects' status. */
export type Built = Pick<BuildResult, 'status'> & {
  hash: string;
  /** Why its snapshot is not pushed (publish/publisher.ts: too large); null or absent when it is. */
  withheld?: string | null;
};

export class GenerationLedger {
  readonly #byHash = new Map<string, Map<string, number>>();
  readonly #kept: number;

  // 8, not more: each hash costs a Map entry per object (64 hashes of 10,000 objects held
  // 28 MiB), and a pod more than 8 builds behind is behind whatever its hash holds.
  constructor(kept = 8) {
    this.#kept = kept;
  }

  /**
   * Notes the generation of every object this build accepted with all conditions True (the
   * GatewayRoutes and GatewayPlugins of a build; or the Gateways, by "Gateway/ns/name").
   */
  record(result: { hash: string; status: Readonly<Record<string, Judged>> }): void {
    const { hash } = result;
    const gens = this.#byHash.get(hash) ?? new Map<string, number>();
    for (const [key, st] of Object.entries(result.status))
      if (st.conditions.every((c) => c.status === 'True')) gens.set(key, st.observedGeneration);
    this.#byHash.delete(hash); // re-inserted: the newest hash is last
    this.#byHash.set(hash, gens);
    while (this.#byHash.size > this.#kept) this.#byHash.delete(this.#byHash.keys().next().value!);
  }

  get generations(): Generations {
    return this.#byHash;
  }

  /**
   * Every object's conditions: build's Accepted and ResolvedRefs, and Programmed from what the
   * pods run. `written` gives the Programmed condition an object shows now (a new leader adopts it).
   */
  statuses(
    result: Built,
    pods: readonly PodView[],
    written: (key: string) => WrittenCondition | undefined = () => undefined,
  ): Wanted[] {
    return Object.entries(result.status).map(([key, st]) => ({
      key,
      observedGeneration: st.observedGeneration,
      ...(st.routes === undefined ? {} : { routes: st.routes }),
      conditions: [
        ...st.conditions,
        programmed(key, st, result.hash, pods, this.#byHash, written(key), result.withheld ?? null),
      ],
    }));
  }
}
