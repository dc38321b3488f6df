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
  try {
    value = JSON.parse(text);
  } catch {
    return { invalid: true };
  }
  const scan = scanJson(text);
  if (scan.duplicate !== null) return { duplicate: scan.duplicate };
  if (scan.inexact) return { inexact: true };
  try {
    return { text: canonicalJson(value) };
  } catch {
    return { inexact: true };
  }
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

/**
 * One pass over valid JSON (JSON.parse accepted it): the first key that appears twice in one
 * object, and whether any number is inexact. Tracking strings and nesting is enough.
 */
export function scanJson(text: string): { duplicate: string | null; inexact: boolean } {
  // One entry per open container: the keys seen so far for an object, null for an array.
  const stack: (Set<string> | null)[] = [];
  let expectKey = false;
  let inexact = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22 /* " */) {
      let j = i + 1;
      while (text.charCodeAt(j) !== 0x22) j += text.charCodeAt(j) === 0x5c /* \ */ ? 2 : 1;
      if (expectKey) {
        const key = JSON.parse(text.slice(i, j + 1)) as string;
        const seen = stack[stack.length - 1]!;
        if (seen.has(key)) return { duplicate: key, inexact };
        seen.add(key);
        expectKey = false;
      }
      i = j;
    } else if (c === 0x2d /* - */ || (c >= 0x30 && c <= 0x39)) {
      let j = i + 1;
      while (j < text.length && isNumberChar(text.charCodeAt(j))) j++;
      if (!inexact && !exactNumber(text.slice(i, j))) inexact = true;
      i = j - 1;
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
  return { duplicate: null, inexact };
}

/** Digits, ".", "e", "E", "+", "-": what a JSON number is made of. */
function isNumberChar(c: number): boolean {
  return (c >= 0x30 && c <= 0x39) || c === 0x2e || c === 0x65 || c === 0x45 || c === 0x2b || c === 0x2d;
}
