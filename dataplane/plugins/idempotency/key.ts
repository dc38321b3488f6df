/**
 * The Idempotency-Key header (spec §2.2, §8): one header line, a bare token or a quoted
 * structured-field string (RFC 8941 sf-string: printable ASCII, `\"` and `\\` escapes), whose
 * value is within the configured length. Anything else is refused with 400 before any record
 * exists, so a malformed key can never match or block another.
 */
export type KeyResult = { key: string } | { missing: true } | { error: string };

// Bare: visible ASCII without the characters that would make it a structured-field list or string.
const BARE = /^[!#-+\--:<-[\]-~]+$/;
const QUOTED = /^"((?:[ !#-[\]-~]|\\["\\])*)"$/;

export function readIdempotencyKey(rawHeaders: string[], min: number, max: number): KeyResult {
  let value: string | undefined;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    if (rawHeaders[i].length !== 15 || rawHeaders[i].toLowerCase() !== 'idempotency-key') continue;
    if (value !== undefined) return { error: 'Idempotency-Key must be sent once' };
    value = rawHeaders[i + 1];
  }
  if (value === undefined) return { missing: true };
  value = value.trim();
  let key: string;
  if (value.startsWith('"')) {
    const m = QUOTED.exec(value);
    if (m === null) return { error: 'Idempotency-Key is not a valid quoted string of printable ASCII' };
    key = m[1].replace(/\\(["\\])/g, '$1');
  } else {
    if (!BARE.test(value))
      return {
        error:
          'Idempotency-Key must be printable ASCII without spaces, quotes, commas, semicolons or backslashes',
      };
    key = value;
  }
  if (key.length < min || key.length > max)
    return { error: `Idempotency-Key must be ${min} to ${max} characters long (it is ${key.length})` };
  return { key };
}
