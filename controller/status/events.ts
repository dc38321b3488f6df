/**
 * Kubernetes Events for condition transitions (what `kubectl describe` shows): one Event when a
 * condition changes status, or first appears False. Normal when it turns True, Warning when it
 * turns False. Best effort: a failed Event never blocks a status write.
 */
import type { Condition } from '../api/common.ts';
import type { Kube } from '../source/kube.ts';

export interface Transition {
  type: string;
  status: string;
  reason: string;
  message: string;
}

export function transitions(before: Condition[] | undefined, after: Condition[]): Transition[] {
  const out: Transition[] = [];
  for (const c of after) {
    const prev = before?.find((b) => b.type === c.type);
    if (prev ? prev.status !== c.status : c.status === 'False')
      out.push({ type: c.type, status: c.status, reason: c.reason, message: c.message });
  }
  return out;
}

export function emitEvents(
  kube: Kube,
  object: { kind: string; namespace: string; name: string; uid?: string },
  list: Transition[],
  now: Date,
): Promise<unknown> {
  return Promise.all(
    list.map((t) =>
      kube.request('POST', `/api/v1/namespaces/${object.namespace}/events`, {
        apiVersion: 'v1',
        kind: 'Event',
        // "<object>.<hex time>", as client-go's event recorder names them.
        metadata: { name: `${object.name}.${eventSuffix(now)}`, namespace: object.namespace },
        involvedObject: {
          apiVersion: 'sluice.dev/v1alpha1',
          kind: object.kind,
          namespace: object.namespace,
          name: object.name,
          ...(object.uid ? { uid: object.uid } : {}),
        },
        reason: t.reason,
        message: `${t.type}=${t.status}: ${t.message}`.slice(0, 1024),
        type: t.status === 'True' ? 'Normal' : 'Warning',
        firstTimestamp: now.toISOString(),
        lastTimestamp: now.toISOString(),
        count: 1,
        source: { component: 'sluice-controller' },
        reportingComponent: 'sluice.dev/controller',
      }),
    ),
  );
}

let sequence = 0;
/** Unique per process and moment: hex nanoseconds-ish time plus a counter. */
function eventSuffix(now: Date): string {
  return `${now.getTime().toString(16)}${(sequence++ & 0xfff).toString(16).padStart(3, '0')}`;
}
