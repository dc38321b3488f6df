/**
 * What the Gateway listener tests share: GET /config's listeners, waiting for a port's state, h2
 * requests by node:http2, and how a port's server set up the connections it accepted.
 */
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { once } from 'node:events';
import { connect, type ClientHttp2Session, type SecureClientSessionOptions } from 'node:http2';
import { connect as tcpConnect, type Socket } from 'node:net';
import { request } from 'undici';
import type { DataPlane } from '../../dataplane/main.ts';
import { until } from './until.ts';

export interface ListenerView {
  id: string;
  port: number;
  bound: boolean;
  error?: string;
}

/** GET /config's `listeners` (none: []). */
export async function listenersOf(adminUrl: string): Promise<ListenerView[]> {
  const body = (await (await request(`${adminUrl}/config`)).body.json()) as { listeners?: ListenerView[] };
  return body.listeners ?? [];
}

/** Waits until GET /config says every listener on `port` is bound (or, with bound false, failed). */
export function untilPort(dp: Pick<DataPlane, 'adminUrl'>, port: number, bound = true, ms = 5_000) {
  return until(async () => {
    const on = (await listenersOf(dp.adminUrl)).filter((l) => l.port === port);
    return on.length > 0 && on.every((l) => l.bound === bound && (bound || l.error !== undefined));
  }, ms);
}

export interface H2Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  /** The response's trailers ({} when none came). */
  trailers: Record<string, string | string[] | undefined>;
}

/** One request on an open h2 session; `more`: its other headers and its body. */
export function h2Request(
  session: ClientHttp2Session,
  authority: string,
  path: string,
  method = 'GET',
  more: { headers?: Record<string, string>; body?: string } = {},
): Promise<H2Answer> {
  return new Promise((resolve, reject) => {
    const stream = session.request({
      ':method': method,
      ':path': path,
      ':authority': authority,
      ...more.headers,
    });
    let headers: H2Answer['headers'] = {};
    let trailers: H2Answer['trailers'] = {};
    const chunks: Buffer[] = [];
    stream.on('response', (h) => {
      headers = h;
    });
    stream.on('trailers', (t) => {
      trailers = t;
    });
    stream.on('data', (c: Buffer) => chunks.push(c));
    stream.on('end', () =>
      resolve({
        status: Number(headers[':status']),
        headers,
        body: Buffer.concat(chunks).toString(),
        trailers,
      }),
    );
    stream.on('error', reject);
    stream.end(more.body);
  });
}

/** An h2 session: h2c with prior knowledge for http://, TLS with ALPN h2 for https://. */
export async function h2Session(
  url: string,
  tls: SecureClientSessionOptions = {},
): Promise<ClientHttp2Session> {
  const session = connect(url, tls);
  await new Promise<void>((resolve, reject) => {
    session.once('connect', () => resolve());
    session.once('error', reject);
  });
  return session;
}

/** How a server set up a connection it accepted. */
export interface AcceptedSocket {
  /** TCP_NODELAY (Nagle's algorithm off). */
  noDelay: unknown;
  /** Half-open: the socket does not end itself when the client's side ends. */
  allowHalfOpen: boolean;
}

/**
 * Opens a TCP connection to each port on 127.0.0.1 (no request, no TLS handshake) and reports
 * how the server side was set up: the socket node:net publishes on `net.server.socket` as it
 * accepts. node:net keeps what setNoDelay was given under its kSetNoDelay symbol (no public
 * getter); `undefined` if a Node version drops it.
 */
export async function acceptedSockets(ports: readonly number[]): Promise<AcceptedSocket[]> {
  const accepted: Socket[] = [];
  const onSocket = (m: unknown) => accepted.push((m as { socket: Socket }).socket);
  subscribe('net.server.socket', onSocket);
  try {
    const out: AcceptedSocket[] = [];
    for (const port of ports) {
      const client = tcpConnect(port, '127.0.0.1');
      await once(client, 'connect');
      const mine = (s: Socket) => s.localPort === port && s.remotePort === client.localPort;
      await until(() => accepted.some(mine), 2_000, 5);
      const server = accepted.find(mine)!;
      const key = Object.getOwnPropertySymbols(server).find((k) => k.description === 'kSetNoDelay');
      out.push({
        noDelay: key === undefined ? undefined : (server as unknown as Record<symbol, unknown>)[key],
        allowHalfOpen: server.allowHalfOpen,
      });
      client.destroy();
    }
    return out;
  } finally {
    unsubscribe('net.server.socket', onSocket);
  }
}
