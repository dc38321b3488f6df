/**
 * A request's abort signal: aborted when its client goes away before the response ended (an
 * HTTP/1.1 socket closed, an h2 stream reset, its session gone), so that every upstream call
 * made for the client stops at once, whether its response has started or not, and frees its
 * upstream connection. One 'close' listener on the response sees every way: node:http emits it
 * when the socket closes, node:http2's compatibility response when its stream closes. Whether
 * the response had ended tells a normal close from a cancel: a reset h2 stream's compatibility
 * response reads as *finished* (writableFinished) but never as *ended* (writableEnded).
 * (A Withdrawal, not an AbortController: see upstream/call-signal.ts for the cost.)
 */
import type { ServerResponse } from 'node:http';
import { type CallSignal, Withdrawal } from '../upstream/call-signal.ts';
import { CLIENT_CLOSED } from '../upstream/errors.ts';

export function clientSignal(res: ServerResponse): CallSignal {
  const signal = new Withdrawal();
  if (isClosed(res)) {
    if (!res.writableEnded) signal.abort(CLIENT_CLOSED);
  }
  // `on`, not `once` (no wrapper to allocate): a response emits 'close' once.
  else
    res.on('close', () => {
      if (!res.writableEnded) signal.abort(CLIENT_CLOSED);
    });
  return signal;
}

/** Closed already (the client left while a plugin waited): no 'close' is to come. */
function isClosed(res: ServerResponse): boolean {
  if (res.destroyed) return true;
  // node:http2's compatibility response has no `destroyed`: its stream tells.
  return (res as unknown as { stream?: { destroyed: boolean } }).stream?.destroyed === true;
}
