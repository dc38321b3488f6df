/**
 * JSON request bodies, read as the upstream will read them: canonical (RFC 8785: keys sorted,
 * no white space, numbers and strings in ECMAScript form), so two bodies that differ only in key
 * order or spacing have one fingerprint. An object with a duplicate key is refused: parsers
 * disagree on which value wins, so the gateway and the upstream could read two requests
 * (config/json-scan.ts finds it, and the numbers a double cannot hold).
 */
import { canonicalJson } from '../../config/canonical-json.ts';
import { scanJson } from '../../config/json-scan.ts';

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
  if (scan.duplicate !== null) return { duplicate: scan.duplicate.key };
  if (scan.inexact) return { inexact: true };
  try {
    return { text: canonicalJson(value) };
  } catch {
    return { inexact: true };
  }
}
