/**
 * Ends a response whose whole body the gateway holds (a replay, a cache hit).
 *
 * Optimization: a body up to ONE_WRITE_BYTES is passed as a latin1 string (byte for byte the
 * stored bytes), which Node appends to the response head: head and body leave in one write() of
 * one buffer instead of a corked writev() of two (measured on the idempotent replay and the cache
 * hit: bench/README.md). Larger bodies stay Buffers: no copy of a big body.
 */
import type { ServerResponse } from 'node:http';

const ONE_WRITE_BYTES = 16 * 1024;

/** `body` null: none (a HEAD, a 304). */
export function endWithBody(res: ServerResponse, body: Buffer | null): void {
  if (body === null || body.length === 0) res.end();
  else if (body.length <= ONE_WRITE_BYTES) res.end(body.toString('latin1'), 'latin1');
  else res.end(body);
}
