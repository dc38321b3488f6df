/**
 * JSON request bodies, read as the upstream will read them: canonical (RFC 8785: keys sorted,
 * no white space, numbers and strings in ECMAScript form), so two bodies that differ only in key
 * order or spacing have one fingerprint. An object with a duplicate key is refused: parsers
 * disagree on which value wins, so the gateway and the upstream could read two requests.
 */
import { canonicalJson } from '../../config/canonical-json.ts';

export type CanonicalBody = { text: string } | { duplicate: string } | { invalid: true };

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
  const duplicate = findDuplicateKey(text);
  return duplicate === null ? { text: canonicalJson(value) } : { duplicate };
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
