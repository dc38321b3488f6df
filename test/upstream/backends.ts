/**
 * Back ends for balancing tests: each a real HTTP server on loopback that answers with its own
 * name (JSON), counts its requests, and keeps its open connections so a test can see a drained
 * endpoint's pool close them. A path with `/slow/<ms>` answers after ms.
 */
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

export interface Backend {
  name: string;
  address: string;
  port: number;
  /** Requests received. */
  hits: number;
  /** What the last request carried: path and Host. */
  last: { url: string; host: string } | null;
  /** Open connections. */
  sockets: Set<Socket>;
  server: Server;
  /** Every answer is a 503. */
  failing: boolean;
  /** Every answer waits this long (ms). */
  delayMs: number;
  close(): Promise<void>;
}

export async function startBackend(name: string, address = '127.0.0.1'): Promise<Backend> {
  const sockets = new Set<Socket>();
  const b: Backend = {
    name,
    address,
    port: 0,
    hits: 0,
    last: null,
    sockets,
    server: createServer((req: IncomingMessage, res) => {
      b.hits++;
      b.last = { url: req.url ?? '', host: req.headers.host ?? '' };
      const answer = () => {
        const body = JSON.stringify({ name });
        res.writeHead(b.failing ? 503 : 200, {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
        });
        res.end(body);
      };
      const slow = /\/slow\/(\d+)/.exec(req.url ?? '');
      const wait = slow ? Number(slow[1]) : b.delayMs;
      if (wait > 0) setTimeout(answer, wait).unref();
      else answer();
    }),
    failing: false,
    delayMs: 0,
    close: async () => {
      b.server.closeAllConnections();
      await new Promise((r) => b.server.close(r));
    },
  };
  b.server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  b.server.listen(0, address);
  await once(b.server, 'listening');
  b.port = (b.server.address() as AddressInfo).port;
  return b;
}

/** The endpoint the table lists for a backend. */
export const endpointOf = (b: Backend) => ({ address: b.address, port: b.port });
