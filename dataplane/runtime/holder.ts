/**
 * Holds the running Runtime: one reference, swapped atomically. A request reads `current` once
 * at ingress and keeps that runtime to its end, so a swap never changes a request midway.
 */
import type { Snapshot } from '../config/route-table.ts';
import { validateSnapshot, type TableError } from '../config/validate.ts';
import type { PoolRegistry } from '../upstream/pools.ts';
import { buildRuntime, type Runtime } from './build-runtime.ts';
import type { RuntimeDeps } from '../pipeline/route.ts';

export type ApplyResult =
  | { result: 'applied' | 'unchanged'; hash: string }
  | { result: 'rejected'; errors: TableError[] };

const RETIRE_AFTER_MS = 10_000;

export class RuntimeHolder {
  current: Runtime | null = null;
  /** The snapshot `current` was built from (GET /debug/config); its routes are the runtime's own entries. */
  snapshot: Snapshot | null = null;
  readonly #pools: PoolRegistry;
  readonly #deps: RuntimeDeps;
  readonly #onApplied: (s: Snapshot) => void;

  constructor(pools: PoolRegistry, deps: RuntimeDeps, onApplied: (s: Snapshot) => void = () => {}) {
    this.#pools = pools;
    this.#deps = deps;
    this.#onApplied = onApplied;
  }

  get hash(): string {
    return this.current?.hash ?? '';
  }

  /** Retires the running runtime (shutdown). */
  close(): void {
    this.current?.close();
    this.current = null;
    this.snapshot = null;
  }

  /** Validates and applies a snapshot; on any error the running runtime stays. */
  apply(snapshot: unknown): ApplyResult {
    const errors = validateSnapshot(snapshot);
    if (errors.length) {
      this.#deps.metrics.configLoads.labels('rejected').inc();
      return { result: 'rejected', errors };
    }
    return this.applyValid(snapshot as Snapshot);
  }

  /**
   * Applies a snapshot that validateSnapshot already accepted (a cluster primary validates once
   * for all its workers); building the runtime can still refuse it.
   */
  applyValid(s: Snapshot): ApplyResult {
    if (s.hash === this.hash) {
      this.#deps.metrics.configLoads.labels('unchanged').inc();
      return { result: 'unchanged', hash: s.hash };
    }
    let runtime: Runtime;
    try {
      runtime = buildRuntime(s.hash, s.table, this.#pools, this.#deps, this.current);
    } catch (err) {
      this.#deps.metrics.configLoads.labels('rejected').inc();
      return { result: 'rejected', errors: [{ field: 'table', message: (err as Error).message }] };
    }
    const previous = this.current;
    this.current = runtime;
    this.snapshot = s;
    // Requests matched on the previous runtime just before the swap still use its plugins: retire it after a grace.
    // Only its close() waits for the grace, not the runtime: those requests hold the runtime themselves, and a
    // timer holding it kept every snapshot of the last 10 s alive (a push a second while 2,000 routes were
    // applied: ten runtimes of ~22 MB each, and the data plane near its heap limit).
    if (previous !== null) setTimeout(previous.close, RETIRE_AFTER_MS).unref();
    this.#pools.retain(runtime.upstreamIds);
    this.#deps.metrics.retain(new Set(runtime.routes.map((r) => r.id)), runtime.upstreamIds);
    this.#deps.metrics.configHash(s.hash);
    this.#deps.metrics.configLoads.labels('applied').inc();
    this.#onApplied(s);
    return { result: 'applied', hash: s.hash };
  }
}
