/**
 * One place an upstream's connections go: the url's own host, or one address of a Service's
 * endpoints. Its undici Pool is made on first use (see LazyUpstream in pools.ts). An endpoint's
 * Pool keeps the url's origin, so the Host header and the TLS server name (and the name its
 * certificate is checked against) are the url's; only its connector dials the address instead.
 *
 * An h2c upstream (route-table.ts `protocol`) gets a Pool of HTTP/2 sessions with prior
 * knowledge: undici's own (`useH2c`: its connector marks the cleartext socket as h2, and its
 * Client speaks HTTP/2 on it), so h2c goes through the one mechanism HTTP/1.1 and h2 over TLS go
 * through, with the same tries, timeouts, breaker and drain. Per session undici opens at most
 * min(100, the peer's SETTINGS_MAX_CONCURRENT_STREAMS) streams; the Pool opens another session
 * only while every one it has is full (at most H2C_SESSIONS), reconnects a session that closed,
 * and on a GOAWAY lets the streams the peer accepted finish while new ones go to a new session.
 * A session without a stream for the upstream's idleMs is closed.
 */
import { isIP } from 'node:net';
import { buildConnector, Pool } from 'undici';
import { endpointKey } from '../config/endpoints.ts';
import type { Endpoint as TableEndpoint } from '../config/route-table.ts';
import type { AttemptTarget } from '../observability/tracing.ts';
import { type Candidate, hash32 } from './balancer.ts';
import { H1Pool } from './h1-pool.ts';
import type { Ejectable } from './outlier.ts';

/** How an endpoint's connections are made: its upstream's settings, the same for all its endpoints. */
export interface Dial {
  connectMs: number;
  /** HTTP/2 with prior knowledge (Upstream.protocol 'h2c'). */
  h2c: boolean;
  /** Idle time after which an h2c session without streams is closed (the upstream's timeouts.idleMs). */
  idleMs: number;
}

/**
 * Sessions an h2c endpoint's Pool may hold: more than one only while every session has as many
 * streams as its peer allows (a peer allowing 100 takes 1,600 concurrent streams before requests
 * queue in the Pool).
 */
export const H2C_SESSIONS = 16;

export class Endpoint implements Candidate, AttemptTarget, Ejectable {
  /** "10.0.0.7:8080", "[fd00::7]:8080"; the url's host for an upstream without endpoints. */
  readonly key: string;
  /** Where its connections go, as the access log shows it: "http://10.0.0.7:8080" (the url's origin without endpoints). */
  readonly address: string;
  readonly seed: number;
  /** The url's host and port: what the Host header names (a try span's server.address/port). */
  readonly serverAddress: string;
  readonly serverPort: number;
  /**
   * The address connections go to (a try span's network.peer.*): the endpoint's; without
   * endpoints the url's host when it is an IP address, else null (a DNS name is resolved per
   * connection, by undici, out of sight).
   */
  readonly peerAddress: string | null;
  readonly peerPort: number;
  inFlight = 0;
  /** Outlier detection's state (outlier.ts): failures in a row, ejected until, times ejected. */
  failures = 0;
  ejectedUntil = 0;
  ejections = 0;
  readonly #origin: string;
  readonly #dial: Dial;
  readonly #at: TableEndpoint | null;
  #pool: Pool | null = null;
  #h1: H1Pool | null = null;
  #closed = false;
  /** What else holds connections to this endpoint (the grpc handler's channel), closed with it; mostly none. */
  #others: (() => void)[] | null = null;

  /** `at` null: connect to the origin's host. */
  constructor(origin: string, dial: Dial, at: TableEndpoint | null) {
    this.key = at === null ? new URL(origin).host : endpointKey(at);
    this.address = at === null ? origin : `${new URL(origin).protocol}//${this.key}`;
    this.seed = hash32(this.key);
    const url = new URL(origin);
    // URL keeps an IPv6 host in brackets; the conventions write the bare address.
    this.serverAddress = url.hostname.replace(/^\[(.*)\]$/, '$1');
    this.serverPort = Number(url.port) || (url.protocol === 'https:' ? 443 : 80);
    this.peerAddress = at !== null ? at.address : isIP(this.serverAddress) !== 0 ? this.serverAddress : null;
    this.peerPort = at !== null ? at.port : this.serverPort;
    this.#origin = origin;
    this.#dial = dial;
    this.#at = at;
  }

  /**
   * Where a request goes: a cleartext HTTP/1.1 endpoint's own connections (h1-pool.ts), else
   * undici's pool (TLS, h2c).
   */
  get dispatcher(): Pick<Pool, 'dispatch'> {
    if (this.#h1 !== null) return this.#h1;
    if (this.#dial.h2c || !this.#origin.startsWith('http:')) return this.pool;
    const url = new URL(this.#origin);
    const at = this.#at;
    this.#h1 = new H1Pool({
      host: at !== null ? at.address : this.serverAddress,
      port: at !== null ? at.port : this.serverPort,
      hostHeader: url.host,
      connections: 256,
      connectMs: this.#dial.connectMs,
      keepAliveMs: 30_000,
    });
    if (this.#closed) this.#h1.close().catch(() => {});
    return this.#h1;
  }

  /** undici's pool: TLS and h2c requests, and WebSocket upgrades. */
  get pool(): Pool {
    if (this.#pool !== null) return this.#pool;
    const { connectMs, h2c } = this.#dial;
    const at = this.#at;
    this.#pool = h2c
      ? new Pool(this.#origin, {
          connections: H2C_SESSIONS,
          allowH2: true,
          // Read by the Pool itself (not only its connector): while the first session connects,
          // requests wait for it rather than each opening a session of its own.
          useH2c: true,
          keepAliveTimeout: this.#dial.idleMs,
          connect: dialing(at, connectMs, true),
          headersTimeout: 0,
          bodyTimeout: 0,
        } as Pool.Options)
      : new Pool(this.#origin, {
          connections: 256,
          pipelining: 1,
          keepAliveTimeout: 30_000,
          connect: at === null ? { timeout: connectMs } : dialing(at, connectMs, false),
          // Off in undici: upstream/deadlines.ts keeps the headers and body timeouts of every try
          // (undici's cost a promoted timer object a request); the WebSocket handshake sets its own.
          headersTimeout: 0,
          bodyTimeout: 0,
        });
    // Retired before its first request: a late caller gets a closed pool, as it did when pools were eager.
    if (this.#closed) this.#pool.close().catch(() => {});
    return this.#pool;
  }

  /**
   * Closes the pool if it was ever made (and any made later). undici's close is graceful:
   * requests queued or under way finish, then the connections close. An endpoint that left the
   * slice is drained this way: it is out of the list first, so nothing new is sent to it.
   */
  async close(): Promise<void> {
    this.#closed = true;
    const others = this.#others;
    this.#others = null;
    if (others !== null) for (const close of others) close();
    await Promise.all([this.#pool?.close(), this.#h1?.close()]);
  }

  /**
   * `close` runs when this endpoint closes (now if it has): a client of its own to the endpoint
   * (grpc's channel, handlers/grpc/channels.ts) is drained with it, and only pools.ts knows when
   * the endpoint leaves (the snapshot that drops it runs) or its upstream is retired.
   */
  onClose(close: () => void): void {
    if (this.#closed) close();
    else if (this.#others === null) this.#others = [close];
    else this.#others.push(close);
  }
}

/**
 * undici's own connector (the same defaults a Pool builds): dialing `at` whatever host the
 * origin names (null: the origin's host); with useH2c its cleartext sockets are marked h2, so
 * the Client speaks HTTP/2 with prior knowledge on them.
 */
function dialing(at: TableEndpoint | null, timeout: number, useH2c: boolean): buildConnector.connector {
  // useH2c is undici's (core/connect.js) but not in its BuildOptions type.
  const connect = buildConnector(useH2c ? ({ timeout, useH2c } as buildConnector.BuildOptions) : { timeout });
  if (at === null) return connect;
  const port = String(at.port);
  // `host` (the origin's) stays: undici takes the TLS server name from it.
  return (opts, callback) => connect({ ...opts, hostname: at.address, port }, callback);
}
