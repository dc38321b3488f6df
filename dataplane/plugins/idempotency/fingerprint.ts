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
  const contentType = input.headers['content-type'];
  let body: Buffer | string = input.body;
  if (input.body.length > 0 && isJsonContentType(contentType)) {
    const c = canonicalJsonBody(input.body.toString('utf8'));
    if ('duplicate' in c)
      return { error: `the JSON body has the key ${JSON.stringify(c.duplicate)} twice in one object` };
    // Not JSON after all: hashed as bytes; the upstream will say what it thinks of it.
    if ('text' in c) body = c.text;
  }
  const query = queryKey(input.query);
  const head = JSON.stringify([
    input.method,
    input.routeId,
    input.path,
    query,
    contentType ?? '',
    input.fingerprintHeaders.map((h) => {
      const v = input.headers[h];
      return Array.isArray(v) ? v.join(', ') : (v ?? null);
    }),
  ]);
  // The same bytes either way (strings hash as UTF-8); one-shot for text, which is the JSON case.
  return {
    fingerprint:
      typeof body === 'string'
        ? hash('sha256', `${head}\n${body}`)
        : createHash('sha256').update(head).update('\n').update(body).digest('hex'),
  };
}
