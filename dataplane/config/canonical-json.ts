/**
 * Canonical JSON (RFC 8785 for the values a route table holds): object keys sorted by UTF-16
 * code units, no white space, numbers and strings as JSON.stringify writes them. The same
 * table always gives the same bytes, so the same hash: a no-op edit pushes nothing.
 */
import { hash } from 'node:crypto';

/**
 * Optimization: the text is written by the native JSON.stringify over a copy of the value whose
 * objects hold their keys in sorted order (subtrees already in that order are not copied), and
 * the sorted order of a key list is worked out once per call for all objects with that list.
 * For a 10,000-route table (7.6 MB) this takes ~45 ms instead of ~135 ms for building the text
 * in JS (canonicalJsonReference below, kept as the definition and the fallback). A value the
 * copy cannot reproduce exactly (an object with a key starting with a digit, which V8 would
 * put first in numeric order) is written by the reference.
 */
export function canonicalJson(value: unknown): string {
  let sorted: unknown;
  try {
    sorted = new SortedCopy().of(value);
  } catch (err) {
    if (err !== NOT_PLAIN) throw err;
    return canonicalJsonReference(value);
  }
  return JSON.stringify(sorted) ?? 'null';
}

/** The definition: what canonicalJson returns, written out in the plainest way. */
export function canonicalJsonReference(value: unknown): string {
  if (value === null || typeof value !== 'object') {
    if (typeof value === 'number' && !Number.isFinite(value))
      throw new TypeError('canonicalJson: non-finite number');
    return JSON.stringify(value) ?? 'null';
  }
  if (Array.isArray(value))
    return `[${value.map((v) => (v === undefined ? 'null' : canonicalJsonReference(v))).join(',')}]`;
  const obj = value as Record<string, unknown>;
  const keys = Object.keys(obj)
    .filter((k) => obj[k] !== undefined)
    .sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJsonReference(obj[k])}`).join(',')}}`;
}

const NOT_PLAIN = new Error('canonicalJson: not reproducible by a sorted copy');

/**
 * A value with every object's keys in sorted order, for JSON.stringify to write the way the
 * reference does: the same value when nothing needs to change, else a plain copy (functions and
 * symbols become null, as the reference writes them; toJSON is never called).
 *
 * Optimization: an object's key order is checked with for…in (no array of its keys), and the
 * controller builds its tables with keys in sorted order already (controller/compile/index.ts),
 * so a 10,000-route table is written without a copy: the copy and its key arrays were ~60 MB of
 * garbage per build, a third of what a build allocated.
 */
class SortedCopy {
  /** Key lists met so far (by first key, a few each) and their sorted order. */
  readonly #orders = new Map<string, { keys: string[]; sorted: string[] }[]>();

  of(value: unknown): unknown {
    if (value === null || typeof value !== 'object') {
      if (typeof value === 'number') {
        if (!Number.isFinite(value)) throw new TypeError('canonicalJson: non-finite number');
      } else if (typeof value === 'function' || typeof value === 'symbol') return null;
      return value;
    }
    if (Array.isArray(value)) {
      let out: unknown[] | null = typeof (value as { toJSON?: unknown }).toJSON === 'function' ? [] : null;
      for (let i = 0; i < value.length; i++) {
        const v: unknown = value[i];
        const c = this.of(v);
        if (out === null && c !== v) out = value.slice(0, i);
        if (out !== null) out.push(c);
      }
      return out ?? value;
    }
    const obj = value as Record<string, unknown>;
    const proto: unknown = Object.getPrototypeOf(obj);
    // A class instance (Date, Map, a boxed string…) or a toJSON would be written differently by JSON.stringify.
    if ((proto === Object.prototype || proto === null) && typeof obj.toJSON !== 'function') {
      let prev: string | null = null;
      let same = true;
      for (const k in obj) {
        if (!Object.hasOwn(obj, k)) continue;
        if (startsWithDigit(k)) throw NOT_PLAIN;
        if (prev !== null && prev > k) {
          same = false;
          break;
        }
        prev = k;
        const v = obj[k];
        if (this.of(v) !== v) {
          same = false;
          break;
        }
      }
      if (same) return obj;
    }
    const own = Object.keys(obj);
    const keys = this.#sortedOrder(own);
    const out: Record<string, unknown> = {};
    for (let i = 0; i < keys.length; i++) {
      const copy = this.of(obj[keys[i]]);
      if (keys[i] === '__proto__')
        Object.defineProperty(out, '__proto__', {
          value: copy,
          enumerable: true,
          writable: true,
          configurable: true,
        });
      else out[keys[i]] = copy;
    }
    return out;
  }

  /** keys in sorted order (the same array when they are in it already). */
  #sortedOrder(keys: string[]): string[] {
    if (keys.length === 0) return keys;
    let list = this.#orders.get(keys[0]);
    if (list === undefined) {
      list = [];
      this.#orders.set(keys[0], list);
    }
    next: for (const known of list) {
      if (known.keys.length !== keys.length) continue;
      for (let i = 1; i < keys.length; i++) if (known.keys[i] !== keys[i]) continue next;
      return known.sorted;
    }
    let same = true;
    for (let i = 0; i < keys.length; i++) {
      if (startsWithDigit(keys[i])) throw NOT_PLAIN; // maybe an array index, see canonicalJson
      if (i > 0 && keys[i - 1] > keys[i]) same = false;
    }
    const sorted = same ? keys : [...keys].sort();
    if (list.length < 8) list.push({ keys, sorted });
    return sorted;
  }
}

/** "0"–"9" first: V8 may hold such a key in numeric order, before the others. */
function startsWithDigit(key: string): boolean {
  const c = key.charCodeAt(0);
  return c >= 0x30 && c <= 0x39;
}

/**
 * A function giving a plain value with every object's keys in sorted order (the value itself
 * where they are): what the controller stores in a table it builds, so that canonicalJson need
 * not copy it. One per table: it remembers the sorted order of the key lists it met.
 */
export function keySorter(): <T>(value: T) => T {
  const copy = new SortedCopy();
  return <T>(value: T): T => {
    try {
      return copy.of(value) as T;
    } catch (err) {
      if (err !== NOT_PLAIN) throw err;
      return value;
    }
  };
}

/** keySorter for one value. */
export function withSortedKeys<T>(value: T): T {
  return keySorter()(value);
}

export function sha256Hex(text: string): string {
  // Optimization: the one-shot crypto.hash, without a Hash object per call (10,000 upstream ids per build).
  return hash('sha256', text, 'hex');
}
