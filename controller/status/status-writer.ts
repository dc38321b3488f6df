/**
 * Writes status to the /status subresource, only when it changes and only while leading.
 * A condition keeps its lastTransitionTime while its status stays the same (metav1.Condition
 * semantics); a write is a JSON merge patch of the whole status. Writes are serialized per
 * object and coalesced: only the newest wanted status is written.
 */
import type { Condition } from '../api/common.ts';
import type { ComputedCondition } from '../build.ts';
import type { Kube } from '../source/kube.ts';
import { EventRecorder, transitions } from './events.ts';

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
function newer(a: string | undefined, b: string): boolean {
  return a !== undefined && /^\d+$/.test(a) && /^\d+$/.test(b) && BigInt(a) > BigInt(b);
}

/**
 * Writes under way at once. A cold start or a failover can want thousands of statuses at
 * once; one request each at the same moment is a burst the API server answers with 429s (and
 * the controller pays in sockets and buffers): client-go's controllers use a few workers too.
 */
const MAX_IN_FLIGHT = 8;

const PLURAL: Record<string, string> = { GatewayRoute: 'gatewayroutes', GatewayPlugin: 'gatewayplugins' };

export class StatusWriter {
  readonly #kube: Kube;
  readonly #current: (key: string) => Current | undefined;
  readonly #now: () => Date;
  readonly #onWrite: (ok: boolean, key: string, status: unknown) => void;
  readonly #events: EventRecorder;
  readonly #pending = new Map<string, Wanted>();
  readonly #writing = new Set<string>();
  /** Keys with a write to make, waiting for one of the MAX_IN_FLIGHT places (insertion order). */
  readonly #queued = new Set<string>();
  /**
   * What this writer last wrote per object, with the resourceVersion the server gave it. The
   * informer cache lags behind our own writes: comparing a new wish with it could drop a
   * needed write (the cache still shows the status before the one just written).
   */
  readonly #written = new Map<string, { resourceVersion: string; status: Current['status'] }>();
  /** Failed writes in a row per object, for the backoff. */
  readonly #failures = new Map<string, number>();
  #active = false;

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
    this.#active = active;
    if (active) for (const key of this.#pending.keys()) this.#flush(key);
  }

  want(w: Wanted): void {
    this.#pending.set(w.key, w);
    if (this.#active) this.#flush(w.key);
  }

  /** The status to write, or null when the object already shows it. */
  static next(current: Current | undefined, w: Wanted, now: Date): NonNullable<Current['status']> | null {
    const old = current?.status?.conditions ?? [];
    const conditions = w.conditions.map((c): Condition => {
      const prev = old.find((o) => o.type === c.type);
      const same = prev !== undefined && prev.status === c.status;
      return { ...c, lastTransitionTime: same ? prev.lastTransitionTime : now.toISOString() };
    });
    const unchanged =
      current?.status?.observedGeneration === w.observedGeneration &&
      current?.status?.routes === w.routes &&
      old.length === conditions.length &&
      conditions.every((c) => {
        const o = old.find((x) => x.type === c.type);
        return (
          o !== undefined &&
          o.status === c.status &&
          o.reason === c.reason &&
          o.message === c.message &&
          o.observedGeneration === c.observedGeneration
        );
      });
    if (unchanged) return null;
    return w.routes === undefined
      ? { observedGeneration: w.observedGeneration, conditions }
      : { observedGeneration: w.observedGeneration, conditions, routes: w.routes };
  }

  /** Starts queued writes while there is room (a queued key may turn out to need none). */
  #pump(): void {
    for (const key of this.#queued) {
      if (this.#writing.size >= MAX_IN_FLIGHT || !this.#active) return;
      this.#queued.delete(key);
      this.#flush(key, this.#failures.has(key));
    }
  }

  #flush(key: string, retry = false): void {
    // While an object's write is backing off, a newer wish waits for the retry, which takes it.
    if (this.#writing.has(key) || (this.#failures.has(key) && !retry)) return;
    if (this.#writing.size >= MAX_IN_FLIGHT) {
      this.#queued.add(key);
      return;
    }
    const w = this.#pending.get(key);
    const cached = this.#current(key);
    if (w === undefined || cached === undefined) {
      this.#pending.delete(key); // deleted meanwhile, or nothing wanted
      if (cached === undefined) this.#written.delete(key);
      this.#failures.delete(key);
      return;
    }
    const mine = this.#written.get(key);
    const current = mine && !newer(cached.metadata?.resourceVersion, mine.resourceVersion) ? mine : cached;
    const status = StatusWriter.next(current, w, this.#now());
    if (status === null) {
      this.#pending.delete(key);
      this.#failures.delete(key);
      return;
    }
    this.#pending.delete(key);
    this.#writing.add(key);
    const [kind, ns, name] = key.split('/');
    const path = `/apis/sluice.dev/v1alpha1/namespaces/${ns}/${PLURAL[kind]}/${name}/status`;
    this.#kube
      .request<Current>('PATCH', path, { status }, 'application/merge-patch+json')
      .then(
        (written) => {
          const resourceVersion = written?.metadata?.resourceVersion;
          if (resourceVersion) this.#written.set(key, { resourceVersion, status });
          this.#onWrite(true, key, status);
          const changes = transitions(current.status?.conditions, status.conditions ?? []);
          if (changes.length)
            void this.#events.record({ kind, namespace: ns, name, uid: cached.metadata?.uid }, changes);
        },
        (err: { status?: number }) => {
          this.#onWrite(false, key, status);
          // Gone meanwhile: nothing to write. Else keep the wish (unless a newer one came).
          if (err.status !== 404 && !this.#pending.has(key)) this.#pending.set(key, w);
          return true;
        },
      )
      .then((failed) => {
        this.#writing.delete(key);
        this.#pump();
        // Retried with backoff per object (200 ms doubling to 30 s): an API server answering
        // 429 or 500 is not hammered with a write per object every 200 ms.
        const tries = failed === true ? (this.#failures.get(key) ?? 0) + 1 : 0;
        if (tries === 0) this.#failures.delete(key);
        else this.#failures.set(key, tries);
        if (this.#pending.has(key) && this.#active)
          setTimeout(
            () => this.#flush(key, true),
            tries === 0 ? 0 : Math.min(200 * 2 ** (tries - 1), 30_000),
          ).unref();
      });
  }
}
