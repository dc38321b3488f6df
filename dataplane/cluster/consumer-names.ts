/**
 * Which consumers keep their name in the per-consumer analytics of a pod run with --workers: the
 * primary's decision, so the pod names at most N in all (each worker deciding alone would name
 * its own first N). The first N consumers any worker asks about are named, for the life of the
 * primary (a restarted worker asks again and gets the same answers); every other one is
 * `other`. When the primary sums the workers' series for /metrics, a consumer label it has not
 * named becomes `other` (a worker may not have moved those counts yet); the workers' question
 * about a consumer always reaches the primary before the metrics that show it.
 */
export class ConsumerNames {
  readonly #max: number;
  readonly #named = new Set<string>();

  constructor(max: number) {
    this.#max = max;
  }

  /**
   * The answer to a worker's question about `consumer`; once N are named, `full` lists them (the
   * final set: the worker then knows every name without asking, and that all others are `other`).
   */
  decide(consumer: string): { named: boolean; full: string[] | null } {
    if (!this.#named.has(consumer) && this.#named.size < this.#max) this.#named.add(consumer);
    return {
      named: this.#named.has(consumer),
      full: this.#named.size >= this.#max ? [...this.#named] : null,
    };
  }

  /** A worker's registry as prom-client JSON, every consumer label not named made `other` (in place). */
  relabel(metrics: object[]): object[] {
    for (const m of metrics as { name: string; values?: { labels: Record<string, string | number> }[] }[]) {
      if (!m.name.startsWith('sluice_consumer_')) continue;
      for (const v of m.values ?? []) {
        const c = v.labels.consumer;
        if (typeof c === 'string' && c !== 'other' && c !== '(none)' && !this.#named.has(c))
          v.labels.consumer = 'other';
      }
    }
    return metrics;
  }
}
