/**
 * request_hash (spec §2.1 rule 2, §8): SHA-256 hex, 64 characters, over what makes two
 * requests the same operation: method, route id, normalized path, query parameters in sorted
 * order (repeated ones in theirs: pipeline/query-key.ts), content type, the values of the
 * headers the operation depends on, and the body (canonical when it is JSON, raw bytes otherwise). The client's own headers are read, before
 * any transformer, so a config change to added headers does not turn retries into 422s.
 */
import { createHash, hash } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { queryKey } from '../../pipeline/query-key.ts';
import { canonicalJsonBody, isJsonContentType } from './canonical-body.ts';

export interface FingerprintInput {
  method: string;
  routeId: string;
  path: string;
  query: string;
  headers: IncomingHttpHeaders;
  /** Lower-case names, in config order. */
  fingerprintHeaders: readonly string[];
  body: Buffer;
}

export type FingerprintResult = { fingerprint: string } | { error: string };

export function fingerprint(input: FingerprintInput): FingerprintResult {
  return fingerprintWith(headOf(input), input);
}

/** What the fingerprint covers besides the body, as one string. */
function headOf(input: FingerprintInput): string {
  return JSON.stringify([
    input.method,
    input.routeId,
    input.path,
    queryKey(input.query),
    input.headers['content-type'] ?? '',
    input.fingerprintHeaders.map((h) => {
      const v = input.headers[h];
      return Array.isArray(v) ? v.join(', ') : (v ?? null);
    }),
  ]);
}

function fingerprintWith(head: string, input: FingerprintInput): FingerprintResult {
  let body: Buffer | string = input.body;
  if (input.body.length > 0 && isJsonContentType(input.headers['content-type'])) {
    const c = canonicalJsonBody(input.body.toString('utf8'));
    if ('duplicate' in c)
      return { error: `the JSON body has the key ${JSON.stringify(c.duplicate)} twice in one object` };
    // Not JSON after all: hashed as bytes; the upstream will say what it thinks of it.
    if ('text' in c) body = c.text;
  }
  // The same bytes either way (strings hash as UTF-8); one-shot for text, which is the JSON case.
  return {
    fingerprint:
      typeof body === 'string' ? hash('sha256', `${head}\n${body}`) : bytesDigest(head, input.body),
  };
}

const bytesDigest = (head: string, body: Buffer): string =>
  createHash('sha256').update(head).update('\n').update(body).digest('hex');

/** Requests up to this size (head and body) are remembered by their text: at most 2 MiB of keys in a memo of 1,024. */
export const MEMO_TEXT_CHARS = 2048;

/**
 * Optimization: fingerprints of JSON bodies remembered by the raw bytes (their digest above
 * MEMO_TEXT_CHARS). A retry sends the bytes it sent the first time, so a replay (or an
 * in-progress duplicate) is one Map lookup of the raw request instead of a parse, a
 * duplicate-key scan, a canonical serialization and a hash (~10 % of a replay's CPU). The result
 * is the one `fingerprint` computes: the key covers everything the fingerprint does, byte for
 * byte, so equal keys mean equal requests (a text key holds the head's "[", so it never equals a
 * hex digest); a body that differs in any byte is canonicalized as before (so key order and
 * spacing still do not matter, and a different body is still a different fingerprint). Per
 * plugin instance, the oldest entry dropped first.
 */
export class Fingerprints {
  readonly #memo = new Map<string, FingerprintResult>();
  readonly #max: number;

  constructor(max = 1024) {
    this.#max = max;
  }

  of(input: FingerprintInput): FingerprintResult {
    const head = headOf(input);
    // Bytes already (no body, not JSON): nothing to save.
    if (input.body.length === 0 || !isJsonContentType(input.headers['content-type']))
      return fingerprintWith(head, input);
    // A memo key, not a fingerprint: latin1 maps each byte to one character, so equal keys mean
    // equal bytes (and the head, JSON, holds no bare newline). Up to MEMO_TEXT_CHARS, the
    // text itself: the Map hashes and compares it for ~1 thousand instructions where a SHA-256
    // call costs ~10 (bench/instructions.ts, the idempotent first execution). Above, its digest:
    // the memo keeps its keys, and a key is then 64 characters, whatever the body.
    const text = `${head}\n${input.body.toString('latin1')}`;
    const raw = text.length <= MEMO_TEXT_CHARS ? text : hash('sha256', text);
    let r = this.#memo.get(raw);
    if (r !== undefined) return r;
    r = fingerprintWith(head, input);
    if (this.#memo.size >= this.#max) this.#memo.delete(this.#memo.keys().next().value!);
    this.#memo.set(raw, r);
    return r;
  }

  get size(): number {
    return this.#memo.size;
  }
}
