/**
 * What JSON.parse hides, read in one pass over text it has accepted: a key given twice in one
 * object (JSON.parse keeps the last, other parsers keep the first or refuse, so the gateway and
 * the upstream could read two different requests) and numbers a double cannot hold exactly.
 * The idempotency fingerprint and the grpc handler's request both refuse a duplicate.
 *
 * Hand-written on purpose: a reviver never sees duplicates (the object already holds the last
 * value), and the libraries that report them (JSON ASTs such as momoa or jsonc-parser) parse the
 * text a second time into nodes. The text is known valid, so tracking strings and nesting is
 * enough: no grammar, one pass, one Set per object; a key is unescaped only when it holds a
 * backslash (so `"\u0061"` and `"a"` are one key).
 */

export interface JsonScan {
  /** The first key given twice in one object, with its JSON path ("items[2].sku"), or null. */
  duplicate: { key: string; path: string } | null;
  /** Some number has no exact double (see exactNumber). */
  inexact: boolean;
}

/** `text` must be valid JSON (JSON.parse accepted it). */
export function scanJson(text: string): JsonScan {
  // One entry per open container: the keys seen so far for an object, null for an array; and
  // where in it the scan is (the current member's key, or the current item's index), for the path.
  const seen: (Set<string> | null)[] = [];
  const at: (string | number)[] = [];
  let expectKey = false;
  let inexact = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22 /* " */) {
      // The closing quote: the next one not escaped (preceded by an even run of backslashes).
      let j = text.indexOf('"', i + 1);
      for (;;) {
        let k = j - 1;
        while (text.charCodeAt(k) === 0x5c /* \ */) k--;
        if ((j - 1 - k) % 2 === 0) break;
        j = text.indexOf('"', j + 1);
      }
      if (expectKey) {
        let key = text.slice(i + 1, j);
        if (key.includes('\\')) key = JSON.parse(text.slice(i, j + 1)) as string;
        const top = seen.length - 1;
        const keys = seen[top]!;
        if (keys.has(key)) return { duplicate: { key, path: pathOf(at, top, key) }, inexact };
        keys.add(key);
        at[top] = key;
        expectKey = false;
      }
      i = j;
    } else if (c === 0x2d /* - */ || (c >= 0x30 && c <= 0x39)) {
      let j = i + 1;
      while (j < text.length && isNumberChar(text.charCodeAt(j))) j++;
      if (!inexact && !exactNumber(text.slice(i, j))) inexact = true;
      i = j - 1;
    } else if (c === 0x7b /* { */) {
      seen.push(new Set());
      at.push('');
      expectKey = true;
    } else if (c === 0x5b /* [ */) {
      seen.push(null);
      at.push(0);
    } else if (c === 0x7d /* } */ || c === 0x5d /* ] */) {
      seen.pop();
      at.pop();
    } else if (c === 0x2c /* , */) {
      const top = seen.length - 1;
      expectKey = seen[top] !== null;
      if (!expectKey) (at[top] as number)++;
    }
  }
  return { duplicate: null, inexact };
}

/** "a.b[2].key": the members and items leading to `key` in the container at depth `top`. */
function pathOf(at: readonly (string | number)[], top: number, key: string): string {
  let path = '';
  for (let d = 0; d < top; d++) {
    const name = at[d];
    path += typeof name === 'number' ? `[${name}]` : path === '' ? name : `.${name}`;
  }
  return path === '' ? key : `${path}.${key}`;
}

const MIN_NORMAL = 2.2250738585072014e-308;

/**
 * Whether no other JSON number maps to the same double: true for finite normal values written
 * with at most 15 significant digits (any two such decimals are distinct doubles), so
 * "9007199254740993" and "9007199254740992", or "0.1000000000000000001" and "0.1", stay apart.
 */
export function exactNumber(lexeme: string): boolean {
  const value = Number(lexeme);
  if (!Number.isFinite(value)) return false;
  let digits = 0;
  let pending = 0; // zeros after the first significant digit, counted once a non-zero follows
  let started = false;
  for (let i = 0; i < lexeme.length; i++) {
    const c = lexeme.charCodeAt(i);
    if (c === 0x65 || c === 0x45) break; // e, E: the exponent does not add digits
    if (c < 0x30 || c > 0x39) continue; // sign, point
    if (c === 0x30) {
      if (started) pending++;
      continue;
    }
    started = true;
    digits += pending + 1;
    pending = 0;
  }
  if (digits === 0) return true;
  return Math.abs(value) >= MIN_NORMAL && digits <= 15;
}

/** Digits, ".", "e", "E", "+", "-": what a JSON number is made of. */
function isNumberChar(c: number): boolean {
  return (c >= 0x30 && c <= 0x39) || c === 0x2e || c === 0x65 || c === 0x45 || c === 0x2b || c === 0x2d;
}
