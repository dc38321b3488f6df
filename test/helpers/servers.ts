/** Real servers on loopback for tests: an echo upstream that records what it received, and the data plane. */
import { Writable } from 'node:stream';
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startDataPlane, type DataPlane, type DataPlaneOptions } from '../../dataplane/main.ts';
import { createLogger } from '../../dataplane/observability/log.ts';

export interface Seen {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  rawHeaders: string[];
  body: string;
}

export interface Upstream {
  url: string;
  port: number;
  seen: Seen[];
  server: Server;
  close(): Promise<void>;
}

/**
 * An upstream that answers 200 with JSON {method, url, headers, body} and records each request.
 * `respond` may take over (for slow, failing or odd responses).
 */
export async function startUpstream(
  respond?: (
    req: IncomingMessage,
    res: import('node:http').ServerResponse,
    body: string,
  ) => boolean | undefined,
): Promise<Upstream> {
  const seen: Seen[] = [];
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    try {
      for await (const c of req) chunks.push(c as Buffer);
    } catch {
      // The request was cut (the gateway gave up on a client's body): nothing to answer.
      return;
    }
    const body = Buffer.concat(chunks).toString();
    seen.push({
      method: req.method ?? '',
      url: req.url ?? '',
      headers: req.headers,
      rawHeaders: req.rawHeaders,
      body,
    });
    if (respond?.(req, res, body)) return;
    const out = JSON.stringify({ method: req.method, url: req.url, headers: req.headers, body });
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(out) });
    res.end(out);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    seen,
    server,
    close: () => {
      server.closeAllConnections();
      return new Promise((r) => server.close(() => r()));
    },
  };
}

/** A data plane on free loopback ports, quiet, no state dir unless given. */
export function startTestDataPlane(opts: Partial<DataPlaneOptions> = {}): Promise<DataPlane> {
  return startDataPlane({
    host: '127.0.0.1',
    proxyPort: 0,
    adminPort: 0,
    adminToken: 'test-admin-token',
    accessLog: false,
    drainTimeoutMs: 2_000,
    log: createLogger('silent'),
    ...opts,
  });
}

export { freePort } from './free-port.ts';

/** A logger at `info` whose lines (JSON) the test reads: `{ log, text(), lines() }` (lines parsed). */
export function capturedLog(): {
  log: ReturnType<typeof createLogger>;
  text(): string;
  lines(): Record<string, unknown>[];
} {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, cb) {
      lines.push(chunk.toString());
      cb();
    },
  });
  return {
    log: createLogger('info', sink),
    text: () => lines.join(''),
    lines: () =>
      lines
        .join('')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l)),
  };
}
