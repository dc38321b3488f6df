/**
 * The metadata the compiler reads: names and namespaces end up in ids ("route/<ns>/<name>/…"),
 * so they must be the DNS names Kubernetes allows (never a "/"). The API server guarantees
 * this in a cluster; a hand-written file does not.
 */
import type { ObjectMeta } from '../api/common.ts';
import type { SourceRef } from '../../dataplane/config/route-table.ts';
import type { ObjectRef } from '../source/resource-set.ts';
import { type Diagnostic, invalid } from './diagnostic.ts';

const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

export interface CheckedMeta {
  source: SourceRef;
  /** creationTimestamp in ms since the epoch; undefined when absent or unreadable (sorts last). */
  createdMs: number | undefined;
}

export function checkMetadata(
  ref: ObjectRef,
  meta: ObjectMeta,
): { meta: CheckedMeta; diagnostics: Diagnostic[] } {
  const diagnostics: Diagnostic[] = [];
  if (ref.name.length > 253 || !DNS_SUBDOMAIN.test(ref.name))
    diagnostics.push(
      invalid(ref, 'metadata.name', `${JSON.stringify(ref.name)} is not a DNS-1123 subdomain`),
    );
  if (ref.namespace.length > 63 || !DNS_LABEL.test(ref.namespace))
    diagnostics.push(
      invalid(ref, 'metadata.namespace', `${JSON.stringify(ref.namespace)} is not a DNS-1123 label`),
    );
  const raw: unknown = meta.generation;
  if (raw !== undefined && !(Number.isSafeInteger(raw) && (raw as number) >= 0))
    diagnostics.push(invalid(ref, 'metadata.generation', 'must be a non-negative integer'));
  // Keys in sorted order: the source is written into route tables as it is (withSortedKeys).
  const source = { generation: generationOf(meta), kind: ref.kind, name: ref.name, namespace: ref.namespace };
  return { meta: { source, createdMs: timestampMs(meta.creationTimestamp) }, diagnostics };
}

function timestampMs(value: unknown): number | undefined {
  // The API server always sets a valid one; a file may hold anything, and then the object sorts last.
  if (typeof value !== 'string') return undefined;
  const ms = Date.parse(value);
  return Number.isNaN(ms) ? undefined : ms;
}

/** The generation, 1 when absent (objects from a file have none: call it the first), 0 when unreadable. */
export function generationOf(meta: ObjectMeta): number {
  const g: unknown = meta.generation ?? 1;
  return Number.isSafeInteger(g) && (g as number) >= 0 ? (g as number) : 0;
}
