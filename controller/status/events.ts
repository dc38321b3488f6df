/**
 * Kubernetes Events for condition transitions (what `kubectl describe` shows), recorded the way
 * client-go's event recorder and correlator do it:
 * - one Event when a condition changes status or reason, or first appears unhealthy (False; for
 *   Gateway API's Conflicted, True);
 * - Normal for progress (healthy, or Programmed waiting on pods: Pending), Warning only for a real
 *   fault (invalid config, missing references, a listener conflict, a pod refusing the snapshot, a
 *   pod failing for longer than the publisher's threshold);
 * - the same Event again (same object, type, reason and message) within ten minutes updates the
 *   one already there (count + 1, lastTimestamp) instead of creating another;
 * - at most a burst of 25 Events per object, then one per five minutes (client-go's spam filter).
 * Best effort: a failed Event never blocks a status write.
 */
import type { Condition } from '../api/common.ts';
import type { Kube } from '../source/kube.ts';

export interface Transition {
  type: string;
  status: string;
  reason: string;
  message: string;
}

export interface InvolvedObject {
  /** Default sluice.dev/v1alpha1 (GatewayRoutes and GatewayPlugins). */
  apiVersion?: string;
  kind: string;
  /** '' for a cluster-scoped object (a GatewayClass). */
  namespace: string;
  name: string;
  uid?: string;
  /**
   * Where the Event is written when that is not the object's namespace: a cluster-scoped
   * object's Events go to the controller's own namespace (client-go would write them to
   * "default", where the chart grants nothing; `kubectl describe` finds them in any namespace).
   */
  eventNamespace?: string;
}

/** Condition types whose True is the fault ("abnormal-true polarity": a listener's Conflicted). */
const FAULT_WHEN_TRUE = new Set(['Conflicted']);

function healthy(c: { type: string; status: string }): boolean {
  return c.status === (FAULT_WHEN_TRUE.has(c.type) ? 'False' : 'True');
}

/** `scope` names the part of the object the conditions belong to (a listener, a route's parent). */
export function transitions(
  before: readonly Condition[] | undefined,
  after: readonly Condition[],
  scope?: string,
): Transition[] {
  const out: Transition[] = [];
  for (const c of after) {
    const prev = before?.find((b) => b.type === c.type);
    if (prev ? prev.status !== c.status || prev.reason !== c.reason : !healthy(c))
      out.push({
        type: c.type,
        status: c.status,
        reason: c.reason,
        message: scope ? `${scope}: ${c.message}` : c.message,
      });
  }
  return out;
}

/** Progress is Normal: healthy, and Programmed=False while pods are still taking the snapshot. */
export function eventType(t: Transition): 'Normal' | 'Warning' {
  return healthy(t) || (t.type === 'Programmed' && t.reason === 'Pending') ? 'Normal' : 'Warning';
}

const SIMILAR_WINDOW_MS = 10 * 60_000;
const BURST = 25;
const REFILL_MS = 5 * 60_000;
/** Objects and Events remembered (client-go keeps 4096 in its LRU caches). */
const REMEMBERED = 4096;

export class EventRecorder {
  readonly #kube: Kube;
  readonly #now: () => Date;
  /** The Event last written per (object, type, reason, message): its name and count. */
  readonly #recent = new Map<string, { name: string; namespace: string; count: number; at: number }>();
  /** Tokens left per object, and when they were counted. */
  readonly #buckets = new Map<string, { tokens: number; at: number }>();
  #sequence = 0;

  constructor(kube: Kube, now: () => Date = () => new Date()) {
    this.#kube = kube;
    this.#now = now;
  }

  /** Records the Events for these transitions of one object (the dropped ones are spam). */
  record(object: InvolvedObject, list: Transition[]): Promise<unknown> {
    return Promise.all(
      list.map((t) =>
        this.#one(object, eventType(t), t.reason, `${t.type}=${t.status}: ${t.message}`).catch(() => {}),
      ),
    );
  }

  /** A Warning Event on an object that has no conditions to carry a fault (an Ingress). */
  warning(object: InvolvedObject, reason: string, message: string): Promise<void> {
    return this.#one(object, 'Warning', reason, message).catch(() => {});
  }

  async #one(
    object: InvolvedObject,
    type: 'Normal' | 'Warning',
    reason: string,
    text: string,
  ): Promise<void> {
    const now = this.#now();
    const ms = now.getTime();
    const message = text.slice(0, 1024);
    const objectKey = `${object.kind}/${object.namespace}/${object.name}`;
    const namespace = object.eventNamespace ?? object.namespace;
    if (!this.#take(objectKey, ms)) return;
    const key = `${objectKey}\n${type}\n${reason}\n${message}`;
    const seen = this.#recent.get(key);
    if (seen && ms - seen.at < SIMILAR_WINDOW_MS) {
      seen.count++;
      seen.at = ms;
      remember(this.#recent, key, seen);
      await this.#kube.request(
        'PATCH',
        `/api/v1/namespaces/${seen.namespace}/events/${seen.name}`,
        { count: seen.count, lastTimestamp: now.toISOString() },
        'application/merge-patch+json',
      );
      return;
    }
    const name = `${object.name}.${(ms * 1000 + (this.#sequence++ % 1000)).toString(16)}`;
    remember(this.#recent, key, { name, namespace, count: 1, at: ms });
    await this.#kube.request('POST', `/api/v1/namespaces/${namespace}/events`, {
      apiVersion: 'v1',
      kind: 'Event',
      // "<object>.<hex time>", as client-go's event recorder names them.
      metadata: { name, namespace },
      involvedObject: {
        apiVersion: object.apiVersion ?? 'sluice.dev/v1alpha1',
        kind: object.kind,
        ...(object.namespace && { namespace: object.namespace }),
        name: object.name,
        ...(object.uid ? { uid: object.uid } : {}),
      },
      reason,
      message,
      type,
      firstTimestamp: now.toISOString(),
      lastTimestamp: now.toISOString(),
      count: 1,
      source: { component: 'sluice-controller' },
      reportingComponent: 'sluice.dev/controller',
    });
  }

  /** A token bucket per object: BURST, refilled one per REFILL_MS. */
  #take(objectKey: string, ms: number): boolean {
    const b = this.#buckets.get(objectKey) ?? { tokens: BURST, at: ms };
    const refilled = Math.floor((ms - b.at) / REFILL_MS);
    if (refilled > 0) {
      b.tokens = Math.min(BURST, b.tokens + refilled);
      b.at += refilled * REFILL_MS;
    }
    if (b.tokens === BURST) b.at = ms;
    const ok = b.tokens > 0;
    if (ok) b.tokens--;
    remember(this.#buckets, objectKey, b);
    return ok;
  }
}

/** Sets a key as the newest of a bounded map (insertion order = recency), dropping the oldest. */
function remember<V>(map: Map<string, V>, key: string, value: V): void {
  map.delete(key);
  map.set(key, value);
  if (map.size > REMEMBERED) map.delete(map.keys().next().value!);
}
