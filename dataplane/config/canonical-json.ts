/**
 * Canonical JSON (RFC 8785 for the values a route table holds): object keys sorted by UTF-16
 * code units, no white space, numbers and strings as JSON.stringify writes them. The same
 * table always gives the same bytes, so the same hash: a no-op edit pushes nothing.
 */
import { createHash } from 'node:crypto';

export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') {
    if (typeof value === 'number' && !Number.isFinite(value))
      throw new TypeError('canonicalJson: non-finite number');
    return JSON.stringify(value) ?? 'null';
  }
  if (Array.isArray(value))
    return `[${value.map((v) => (v === undefined ? 'null' : canonicalJson(v))).join(',')}]`;
  const obj = value as Record<string, unknown>;
  const keys = Object.keys(obj)
    .filter((k) => obj[k] !== undefined)
    .sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(obj[k])}`).join(',')}}`;
}

export function sha256Hex(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/** The hash a snapshot of this table carries. */
export function tableHash(table: unknown): string {
  return sha256Hex(canonicalJson(table));
}
