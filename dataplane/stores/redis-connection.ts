/**
 * The data plane's Redis connection: standalone, Sentinel or Cluster by URL, through ioredis.
 *
 * Fail closed and stay bounded. Commands are never queued while the connection is down
 * (enableOfflineQueue off) and never re-sent after a reconnect (maxRetriesPerRequest 0: a
 * claim re-sent could claim twice). Each call has a deadline; when a deadline passes and
 * Redis has answered nothing for that long (a stalled server: SIGSTOP, a partition), the
 * connection is dropped, which fails every command waiting on it at once, and ioredis
 * reconnects with backoff. Calls in flight are capped, so a stall never grows a queue.
 */
import { setTimeout as delay } from 'node:timers/promises';
import { Cluster, Redis, type RedisOptions } from 'ioredis';
import { StoreUnavailableError } from './idempotency-store.ts';

export interface RedisConnectionOptions {
  url: string;
  /** Per call, unless the caller gives its own. */
  timeoutMs?: number;
  maxInFlight?: number;
  /** Called after every call: its name, seconds taken and whether it succeeded. */
  observe?: (op: string, seconds: number, ok: boolean) => void;
  /** Connection errors and stalls (logged by the caller, not thrown). */
  onError?: (err: Error) => void;
}

export type RedisClient = Redis | Cluster;

const BASE: RedisOptions = {
  enableOfflineQueue: false,
  maxRetriesPerRequest: 0,
  connectTimeout: 2_000,
  retryStrategy: (times) => Math.min(50 * 2 ** times, 2_000),
  // Not ioredis's auto-pipelining: it runs one pipeline at a time per connection and settles a
  // pipeline's commands together, so under load commands waited on the previous batch and lived
  // long enough to be promoted (idempotency's first execution: ~900 KB promoted per scavenge,
  // 1.7 ms scavenges, p99 20 ms). RedisCaller corks the socket for the turn instead: the same one
  // write per turn, each command settled on its own reply (measured: 55 → 45 µs, p99 20 → 7 ms).
  enableAutoPipelining: false,
};

function hostsOf(list: string, defaultPort: number): { host: string; port: number }[] {
  return list.split(',').map((hp) => {
    const m = /^\[?([^\]]+?)\]?(?::(\d+))?$/.exec(hp.trim());
    if (!m) throw new Error(`bad host ${JSON.stringify(hp)}`);
    return { host: m[1], port: m[2] ? Number(m[2]) : defaultPort };
  });
}

/**
 * redis://[user:pass@]host:port[/db], rediss://… (TLS),
 * redis-sentinel://[user:pass@]host:port[,host:port…]/master-name[/db],
 * redis-cluster://[user:pass@]host:port[,host:port…]
 */
export function createRedisClient(url: string): RedisClient {
  const m =
    /^(redis-sentinel|redis-cluster):\/\/(?:([^:@/]*)(?::([^@/]*))?@)?([^/]+)(?:\/([^/]*))?(?:\/(\d+))?$/.exec(
      url,
    );
  if (m === null) {
    if (!/^rediss?:\/\//.test(url))
      throw new Error(
        `--redis: ${JSON.stringify(url)} is not a redis://, rediss://, redis-sentinel:// or redis-cluster:// URL`,
      );
    return new Redis(url, BASE);
  }
  const [, scheme, user, pass, hosts, name, db] = m;
  const auth = {
    ...(user ? { username: decodeURIComponent(user) } : {}),
    ...(pass ? { password: decodeURIComponent(pass) } : {}),
  };
  if (scheme === 'redis-cluster')
    return new Cluster(hostsOf(hosts, 6379), {
      enableOfflineQueue: false,
      enableAutoPipelining: true,
      clusterRetryStrategy: (times) => Math.min(50 * 2 ** times, 2_000),
      redisOptions: { ...BASE, ...auth },
    });
  if (!name)
    throw new Error(
      '--redis: a redis-sentinel:// URL names the master: redis-sentinel://host:26379/mymaster',
    );
  return new Redis({ ...BASE, ...auth, sentinels: hostsOf(hosts, 26379), name, db: db ? Number(db) : 0 });
}

export class RedisCaller<Commands> {
  readonly client: RedisClient;
  readonly #timeoutMs: number;
  readonly #maxInFlight: number;
  readonly #observe: NonNullable<RedisConnectionOptions['observe']>;
  readonly #onError: NonNullable<RedisConnectionOptions['onError']>;
  #inFlight = 0;
  #lastReply = Date.now();
  #corked: { uncork(): void } | null = null;
  readonly #uncork = () => {
    this.#corked?.uncork();
    this.#corked = null;
  };

  constructor(client: RedisClient, opts: Omit<RedisConnectionOptions, 'url'> = {}) {
    this.client = client;
    this.#timeoutMs = opts.timeoutMs ?? 1_000;
    this.#maxInFlight = opts.maxInFlight ?? 4_096;
    this.#observe = opts.observe ?? (() => {});
    this.#onError = opts.onError ?? (() => {});
    client.on('error', (err: Error) => this.#onError(err));
  }

  get inFlight(): number {
    return this.#inFlight;
  }

  /** Waits (bounded) for the first connection; false when Redis did not answer in time. */
  async ready(timeoutMs: number): Promise<boolean> {
    const until = Date.now() + timeoutMs;
    while (this.client.status !== 'ready') {
      if (Date.now() >= until || this.client.status === 'end') return false;
      await delay(20);
    }
    return true;
  }

  /** Runs one command (or script) with a deadline; any failure becomes a StoreUnavailableError. */
  call<T>(op: string, fn: (c: Commands) => Promise<T>, timeoutMs = this.#timeoutMs): Promise<T> {
    if (this.client.status !== 'ready')
      return Promise.reject(new StoreUnavailableError(`redis is not connected (${this.client.status})`));
    if (this.#inFlight >= this.#maxInFlight)
      return Promise.reject(new StoreUnavailableError(`${this.#inFlight} redis calls already in flight`));
    const start = performance.now();
    const seconds = () => (performance.now() - start) / 1000;
    this.#inFlight++;
    // Optimization: the commands of one event-loop turn leave in one write (a socket write costs
    // ~5-10 µs of syscall here): the first corks the connection, setImmediate uncorks it once the
    // ready sockets have been read. A Cluster has a socket per node and is left uncorked.
    const stream = (this.client as { stream?: { cork(): void; uncork(): void } }).stream;
    if (this.#corked === null && stream !== undefined) {
      stream.cork();
      this.#corked = stream;
      setImmediate(this.#uncork);
    }
    const pending = fn(this.client as unknown as Commands);
    // One reaction on the command: the in-flight count drops when Redis answers or the connection
    // fails the command, not at our deadline (that is what bounds the commands waiting on a stalled
    // server); a command past its deadline was observed as failed once, when the deadline passed.
    return new Promise<T>((resolve, reject) => {
      let late = false;
      const timer = setTimeout(() => {
        late = true;
        this.#observe(op, seconds(), false);
        reject(
          new StoreUnavailableError(`redis did not answer ${op} within ${timeoutMs} ms`, {
            mayHaveApplied: true,
          }),
        );
        this.#stalled(timeoutMs);
      }, timeoutMs);
      pending.then(
        (value) => {
          this.#inFlight--;
          this.#lastReply = Date.now();
          if (late) return;
          clearTimeout(timer);
          this.#observe(op, seconds(), true);
          resolve(value);
        },
        (err: Error) => {
          this.#inFlight--;
          if (late) return;
          clearTimeout(timer);
          this.#observe(op, seconds(), false);
          reject(
            new StoreUnavailableError(`redis ${op} failed: ${err.message}`, {
              cause: err,
              mayHaveApplied: true,
            }),
          );
        },
      );
    });
  }

  #stalled(timeoutMs: number): void {
    if (Date.now() - this.#lastReply < timeoutMs || this.client.status !== 'ready') return;
    this.#onError(new Error(`redis answered nothing for ${timeoutMs} ms: reconnecting`));
    this.client.disconnect(true);
  }

  async close(): Promise<void> {
    try {
      await this.client.quit();
    } catch {
      this.client.disconnect();
    }
  }
}
