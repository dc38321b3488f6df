/**
 * Draining the HTTP/1.1 connections of one server while the process runs on (a Gateway listener
 * port a snapshot dropped; on SIGTERM InFlight.drain does this for every server at once): idle
 * keep-alive connections close now, a response in flight is finished and then its connection
 * ends, and a request arriving meanwhile on a kept-alive connection is answered with
 * Connection: close.
 */
import type { Server, ServerResponse } from 'node:http';
import type { Http2SecureServer } from 'node:http2';
import type { Socket } from 'node:net';

/** node:http's private link from a socket to the response it is writing (InFlight reads it too). */
type HttpSocket = Socket & { _httpMessage?: ServerResponse | null };

export function drainHttp1(server: Server | Http2SecureServer, sockets: Iterable<Socket>): void {
  // First among the request listeners: a refusal is written synchronously by the pipeline's.
  server.prependListener('request', (_req: unknown, res: ServerResponse) => {
    res.shouldKeepAlive = false;
  });
  for (const socket of sockets as Iterable<HttpSocket>) {
    const res = socket._httpMessage;
    if (res == null) continue;
    if (!res.headersSent) res.shouldKeepAlive = false;
    // Ended once its response closed, unless a pipelined request's response holds it by then.
    else res.once('close', () => !socket.destroyed && socket._httpMessage == null && socket.end());
  }
  // Present on an Http2SecureServer with allowHTTP1 too (Node's HTTP/1 code), missing from its type.
  (server as Server).closeIdleConnections();
}
