/**
 * JSON request bodies, read as the upstream will read them: canonical (RFC 8785: keys sorted,
 * no white space, numbers and strings in ECMAScript form), so two bodies that differ only in key
 * order or spacing have one fingerprint. An object with a duplicate key is refused: parsers
 * disagree on which value wins, so the gateway and the upstream could read two requests.
 */
import { canonicalJson } from '../../config/canonical-json.ts';

/**
 * `text`: the canonical form. `duplicate`: refuse. `invalid` (not JSON) and `inexact` (a number
 * a double cannot hold exactly, or nesting too deep to walk): hash the raw bytes instead, since
 * a canonical form would make different requests look the same.
 */
export type CanonicalBody = { text: string } | { duplicate: string } | { invalid: true } | { inexact: true };

export function isJsonContentType(contentType: string | undefined): boolean {
  if (contentType === undefined) return false;
  const mime = contentType.split(';', 1)[0].trim().toLowerCase();
  return mime === 'application/json' || (mime.startsWith('application/') && mime.endsWith('+json'));
}

export function canonicalJsonBody(text: string): CanonicalBody {
  let value: unknown;
  let exact = true;
  try {
    // The reviver sees each number's source text (JSON.parse source text access, V8 ≥ 11.4).
    value = JSON.parse(text, ((_key: string, v: unknown, context?: { source?: string }) => {
      if (typeof v === 'number' && exact && context?.source !== undefined)
        exact = exactNumber(context.source, v);
      return v;
    }) as (key: string, value: unknown) => unknown);
  } catch {
    return { invalid: true };
  }
  const duplicate = findDuplicateKey(text);
  if (duplicate !== null) return { duplicate };
  if (!exact) return { inexact: true };
  try {
    return { text: canonicalJson(value) };
  } catch {
    return { inexact: true };
  }
}

const NUMBER = /^-?(\d+)(?:\.(\d+))?(?:[eE][+-]?\d+)?$/;
const MIN_NORMAL = 2.2250738585072014e-308;

/**
 * Whether no other JSON number maps to the same double: true for finite normal values written
 * with at most 15 significant digits (any two such decimals are distinct doubles), so
 * "9007199254740993" and "9007199254740992", or "0.1000000000000000001" and "0.1", stay apart.
 */
export function exactNumber(source: string, value: number): boolean {
  const m = NUMBER.exec(source);
  if (m === null || !Number.isFinite(value)) return false;
  const digits = (m[1] + (m[2] ?? '')).replace(/^0+/, '').replace(/0+$/, '');
  if (digits === '') return true;
  return Math.abs(value) >= MIN_NORMAL && digits.length <= 15;
}

/**
 * The first key that appears twice in one object, or null. The text is valid JSON (JSON.parse
 * accepted it), so a scan that tracks strings and nesting is enough.
 */
export function findDuplicateKey(text: string): string | null {
  // One entry per open container: the keys seen so far for an object, null for an array.
  const stack: (Set<string> | null)[] = [];
  let expectKey = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22 /* " */) {
      let j = i + 1;
      while (text.charCodeAt(j) !== 0x22) j += text.charCodeAt(j) === 0x5c /* \ */ ? 2 : 1;
      if (expectKey) {
        const key = JSON.parse(text.slice(i, j + 1)) as string;
        const seen = stack[stack.length - 1]!;
        if (seen.has(key)) return key;
        seen.add(key);
        expectKey = false;
      }
      i = j;
    } else if (c === 0x7b /* { */) {
      stack.push(new Set());
      expectKey = true;
    } else if (c === 0x5b /* [ */) {
      stack.push(null);
    } else if (c === 0x7d /* } */ || c === 0x5d /* ] */) {
      stack.pop();
    } else if (c === 0x2c /* , */) {
      expectKey = stack[stack.length - 1] instanceof Set;
    }
  }
  return null;
}
