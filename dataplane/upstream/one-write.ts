/**
 * Ends a response whose whole body the gateway holds (a replay, a cache hit, an upstream's body
 * that came in one chunk).
 *
 * Optimization: a body up to ONE_WRITE_BYTES is passed as a latin1 string (byte for byte the
 * stored bytes), which Node appends to the response head: head and body leave in one write() of
 * one buffer instead of a corked writev() of two (measured on the idempotent replay, the cache
 * hit and the proxied response: bench/README.md). Larger bodies stay Buffers: no copy of a big body.
 */
import { ServerResponse } from 'node:http';
import type { Writable } from 'node:stream';

export const ONE_WRITE_BYTES = 16 * 1024;

/** `body` null: none (a HEAD, a 304). */
export function endWithBody(res: ServerResponse, body: Buffer | null): void {
  if (body === null || body.length === 0) res.end();
  else if (body.length <= ONE_WRITE_BYTES) res.end(body.toString('latin1'), 'latin1');
  else res.end(body);
}

/**
 * Ends `out` with its last bytes: in one write with the head when `out` is an HTTP/1.1 response
 * (its head then goes with its first write); anything else (a tap's Writable, an HTTP/2
 * response) takes the Buffer as it is.
 */
export function endWithLast(out: Writable, last: Buffer): void {
  if (out instanceof ServerResponse) endWithBody(out, last);
  else out.end(last);
}
