/**
 * The one wait for a client that is slow to read: after write() returned false, go on when the
 * stream drains, or when it closes (a client that went away never drains, and a caller that
 * waited for 'drain' alone would hang with the upstream response half read). Every writer of a
 * response body that passes chunks on with backpressure uses it: the client sink and the
 * response taps (idempotency and cache records, the body transformer). It lives here, under both
 * handlers and plugins, which may not import each other.
 */
import type { Writable } from 'node:stream';

export function afterDrain(out: Writable, then: () => void): void {
  const go = () => {
    // Both listeners go at the first event, so `then` runs once.
    out.off('drain', go);
    out.off('close', go);
    then();
  };
  out.on('drain', go);
  out.on('close', go);
}
