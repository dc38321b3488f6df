/**
 * A plain HTTP/2 upstream in clear text (h2c with prior knowledge, node:http2; no gRPC): what a
 * Service with appProtocol kubernetes.io/h2c runs. It records every stream (its headers, body
 * and whether it was cut before its end) and its sessions (how many were opened, how many are
 * open, the most streams one had open at once), so tests see what the upstream saw.
 *
 * Paths: /slow/<ms> answers after ms; /trailers answers "ab" then trailers; /pipe answers each
 * request chunk as it comes, ending with the request; /hold answers its head and never ends;
 * /reset-before resets the stream before any head, /reset-after after a head and a chunk;
 * /status/<n> answers n; anything else answers JSON {name, method, path, authority, headers, body}.
 */
import { once } from 'node:events';
import {
  createServer,
  type Http2Server,
  type IncomingHttpHeaders,
  type ServerHttp2Session,
  type ServerHttp2Stream,
  type Settings,
} from 'node:http2';
import type { AddressInfo } from 'node:net';

export interface H2cSeen {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  /** The stream closed before the upstream ended its response (the client, or the gateway, cancelled it). */
  cut: boolean;
  /** The session it came on (1 for the first session the server accepted). */
  session: number;
}

export interface H2cUpstream {
  name: string;
  url: string;
  port: number;
  address: string;
  seen: H2cSeen[];
  /** Sessions accepted so far, and those still open. */
  sessionsOpened(): number;
  open: Set<ServerHttp2Session>;
  /** The most streams any one session had open at once. */
  maxConcurrent(): number;
  server: Http2Server;
  close(): Promise<void>;
}

export async function startH2cUpstream(
  name = 'h2c',
  opts: { address?: string; settings?: Settings } = {},
): Promise<H2cUpstream> {
  const address = opts.address ?? '127.0.0.1';
  const seen: H2cSeen[] = [];
  const open = new Set<ServerHttp2Session>();
  const sessionOf = new WeakMap<ServerHttp2Session, number>();
  let opened = 0;
  let maxConcurrent = 0;
  const server = createServer({ settings: opts.settings });
  server.on('session', (s: ServerHttp2Session) => {
    sessionOf.set(s, ++opened);
    open.add(s);
    s.once('close', () => open.delete(s));
    let streams = 0;
    s.on('stream', (stream: ServerHttp2Stream) => {
      maxConcurrent = Math.max(maxConcurrent, ++streams);
      stream.once('close', () => streams--);
    });
  });
  server.on('stream', (stream: ServerHttp2Stream, headers: IncomingHttpHeaders) => {
    const path = String(headers[':path']);
    const rec: H2cSeen = {
      method: String(headers[':method']),
      path,
      headers,
      body: '',
      cut: false,
      session: sessionOf.get(stream.session as ServerHttp2Session) ?? 0,
    };
    seen.push(rec);
    stream.on('error', () => {});
    // Emitted when the stream closes (an RST_STREAM came) while its response is still open.
    stream.once('aborted', () => {
      rec.cut = true;
    });
    if (path === '/pipe') {
      stream.respond({ ':status': 200, 'content-type': 'application/octet-stream' });
      stream.on('data', (c: Buffer) => {
        rec.body += c.toString();
        stream.write(c);
      });
      stream.on('end', () => stream.end());
      return;
    }
    if (path === '/hold') {
      stream.respond({ ':status': 200, 'content-type': 'text/plain' });
      stream.write('held');
      return;
    }
    // destroy(err), not close(code): close ends the response (END_STREAM) before its RST_STREAM,
    // which a peer then reads as a response ended whole. destroy(err) sends RST_STREAM INTERNAL_ERROR.
    if (path === '/reset-before') {
      stream.destroy(new Error('reset before the head'));
      return;
    }
    if (path === '/reset-after') {
      stream.respond({ ':status': 200, 'content-type': 'text/plain' });
      stream.write('partial');
      setTimeout(() => stream.destroy(new Error('reset after the head')), 20);
      return;
    }
    const chunks: Buffer[] = [];
    stream.on('data', (c: Buffer) => chunks.push(c));
    stream.on('end', () => {
      rec.body = Buffer.concat(chunks).toString();
      if (stream.destroyed) return;
      if (path === '/trailers') {
        stream.respond({ ':status': 200, 'content-type': 'text/plain' }, { waitForTrailers: true });
        stream.once('wantTrailers', () => stream.sendTrailers({ 'x-checksum': 'c0ffee', 'x-count': '2' }));
        stream.end('ab');
        return;
      }
      const status = /^\/status\/(\d+)/.exec(path);
      const slow = /^\/slow\/(\d+)/.exec(path);
      const answer = () => {
        if (stream.destroyed) return;
        const body = JSON.stringify({
          name,
          method: rec.method,
          path,
          authority: headers[':authority'],
          headers,
          body: rec.body,
        });
        stream.respond({ ':status': status ? Number(status[1]) : 200, 'content-type': 'application/json' });
        stream.end(body);
      };
      if (slow) setTimeout(answer, Number(slow[1])).unref();
      else answer();
    });
  });
  server.listen(0, address);
  await once(server, 'listening');
  const port = (server.address() as AddressInfo).port;
  return {
    name,
    url: `http://${address.includes(':') ? `[${address}]` : address}:${port}`,
    port,
    address,
    seen,
    sessionsOpened: () => opened,
    open,
    maxConcurrent: () => maxConcurrent,
    server,
    close: async () => {
      for (const s of open) s.destroy();
      await new Promise((r) => server.close(r));
    },
  };
}
