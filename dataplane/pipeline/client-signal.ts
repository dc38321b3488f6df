/**
 * A request's abort signal: aborted when its client goes away before the response ended (an
 * HTTP/1.1 socket closed, an h2 stream reset, its session gone), so that every upstream call
 * made for the client stops at once, whether its response has started or not, and frees its
 * upstream connection. One 'close' listener on the response sees every way: node:http emits it
 * when the socket closes, node:http2's compatibility response when its stream closes. Whether
 * the response had ended tells a normal close from a cancel: a reset h2 stream's compatibility
 * response reads as *finished* (writableFinished) but never as *ended* (writableEnded).
 */
import type { ServerResponse } from 'node:http';
import { CLIENT_CLOSED } from '../upstream/errors.ts';

export function clientSignal(res: ServerResponse): AbortSignal {
  const controller = new AbortController();
  if (isClosed(res)) {
    if (!res.writableEnded) controller.abort(CLIENT_CLOSED);
  }
  // `on`, not `once` (no wrapper to allocate): a response emits 'close' once.
  else
    res.on('close', () => {
      if (!res.writableEnded) controller.abort(CLIENT_CLOSED);
    });
  return controller.signal;
}

/** Closed already (the client left while a plugin waited): no 'close' is to come. */
function isClosed(res: ServerResponse): boolean {
  if (res.destroyed) return true;
  // node:http2's compatibility response has no `destroyed`: its stream tells.
  return (res as unknown as { stream?: { destroyed: boolean } }).stream?.destroyed === true;
}
