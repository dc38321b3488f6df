/**
 * Writes status to the /status subresource, only when it changes and only while leading.
 * A condition keeps its lastTransitionTime while its status stays the same (metav1.Condition
 * semantics); a write is a JSON merge patch of the whole status. Writes are serialized per
 * object and coalesced: only the newest wanted status is written (write-queue.ts).
 */
import type { Condition } from '../api/common.ts';
import type { ComputedCondition } from '../build.ts';
import type { Kube } from '../source/kube.ts';
import { EventRecorder, transitions } from './events.ts';
import { WriteQueue } from './write-queue.ts';

export interface Wanted {
  /** "Kind/namespace/name" */
  key: string;
  observedGeneration: number;
  conditions: ComputedCondition[];
  /** A GatewayPlugin's route count. */
  routes?: number;
}

interface Current {
  metadata?: { resourceVersion?: string; uid?: string };
  status?: { observedGeneration?: number; conditions?: Condition[]; routes?: number };
}

/** Whether resourceVersion a is newer than b (etcd revisions are integers; anything else: assume not). */
export function newer(a: string | undefined, b: string): boolean {
  return a !== undefined && /^\d+$/.test(a) && /^\d+$/.test(b) && BigInt(a) > BigInt(b);
}

/**
 * The wanted conditions with their lastTransitionTime: kept from the condition of the same type
 * while its status stays, now when it changes or first appears (metav1.Condition semantics).
 */
export function withTransitionTimes(
  old: readonly Condition[],
  wanted: readonly ComputedCondition[],
  now: Date,
): Condition[] {
  return wanted.map((c): Condition => {
    const prev = old.find((o) => o.type === c.type);
    const same = prev !== undefined && prev.status === c.status;
    return { ...c, lastTransitionTime: same ? prev.lastTransitionTime : now.toISOString() };
  });
}

/** Whether two lists hold the same conditions by type (status, reason, message, observedGeneration; not the time). */
export function sameConditions(
  old: readonly Omit<Condition, 'lastTransitionTime'>[],
  next: readonly Omit<Condition, 'lastTransitionTime'>[],
): boolean {
  return (
    old.length === next.length &&
    next.every((c) => {
      const o = old.find((x) => x.type === c.type);
      return (
        o !== undefined &&
        o.status === c.status &&
        o.reason === c.reason &&
        o.message === c.message &&
        o.observedGeneration === c.observedGeneration
      );
    })
  );
}

const PLURAL: Record<string, string> = { GatewayRoute: 'gatewayroutes', GatewayPlugin: 'gatewayplugins' };

export class StatusWriter {
  readonly #kube: Kube;
  readonly #current: (key: string) => Current | undefined;
  readonly #now: () => Date;
  readonly #onWrite: (ok: boolean, key: string, status: unknown) => void;
  readonly #events: EventRecorder;
  readonly #queue = new WriteQueue();
  /**
   * What this writer last wrote per object, with the resourceVersion the server gave it. The
   * informer cache lags behind our own writes: comparing a new wish with it could drop a
   * needed write (the cache still shows the status before the one just written).
   */
  readonly #written = new Map<string, { resourceVersion: string; status: Current['status'] }>();

  constructor(
    kube: Kube,
    current: (key: string) => Current | undefined,
    opts: { now?: () => Date; onWrite?: (ok: boolean, key: string, status: unknown) => void } = {},
  ) {
    this.#kube = kube;
    this.#current = current;
    this.#now = opts.now ?? (() => new Date());
    this.#onWrite = opts.onWrite ?? (() => {});
    this.#events = new EventRecorder(kube, this.#now);
  }

  setActive(active: boolean): void {
    this.#queue.setActive(active);
  }

  want(w: Wanted): void {
    this.#queue.want(w.key, () => this.#write(w));
  }

  /** The status to write, or null when the object already shows it. */
  static next(current: Current | undefined, w: Wanted, now: Date): NonNullable<Current['status']> | null {
    const old = current?.status?.conditions ?? [];
    const conditions = withTransitionTimes(old, w.conditions, now);
    const unchanged =
      current?.status?.observedGeneration === w.observedGeneration &&
      current?.status?.routes === w.routes &&
      sameConditions(old, conditions);
    if (unchanged) return null;
    return w.routes === undefined
      ? { observedGeneration: w.observedGeneration, conditions }
      : { observedGeneration: w.observedGeneration, conditions, routes: w.routes };
  }

  #write(w: Wanted): Promise<'done' | 'retry'> | null {
    const { key } = w;
    const cached = this.#current(key);
    if (cached === undefined) {
      this.#written.delete(key); // deleted meanwhile
      return null;
    }
    const mine = this.#written.get(key);
    const current = mine && !newer(cached.metadata?.resourceVersion, mine.resourceVersion) ? mine : cached;
    const status = StatusWriter.next(current, w, this.#now());
    if (status === null) return null;
    const [kind, ns, name] = key.split('/');
    const path = `/apis/sluice.dev/v1alpha1/namespaces/${ns}/${PLURAL[kind]}/${name}/status`;
    return this.#kube.request<Current>('PATCH', path, { status }, 'application/merge-patch+json').then(
      (written) => {
        const resourceVersion = written?.metadata?.resourceVersion;
        if (resourceVersion) this.#written.set(key, { resourceVersion, status });
        this.#onWrite(true, key, status);
        const changes = transitions(current.status?.conditions, status.conditions ?? []);
        if (changes.length)
          void this.#events.record({ kind, namespace: ns, name, uid: cached.metadata?.uid }, changes);
        return 'done';
      },
      (err: { status?: number }) => {
        this.#onWrite(false, key, status);
        // Gone meanwhile: nothing to write. Else tried again with backoff.
        return err.status === 404 ? 'done' : 'retry';
      },
    );
  }
}
