/**
 * The data plane's Redis connection: standalone, Sentinel or Cluster by URL, through ioredis.
 *
 * Fail closed and stay bounded. Commands are never queued while the connection is down
 * (enableOfflineQueue off) and never re-sent after a reconnect (maxRetriesPerRequest 0: a
 * claim re-sent could claim twice). Each call has a deadline; when a deadline passes, every
 * node connection with commands waiting is asked a PING under the same deadline, and a node that
 * answers that neither (a stalled server: SIGSTOP, a partition) has its connection dropped, which
 * fails the commands waiting on it at once, and ioredis reconnects it with backoff. Only that
 * node: on a Cluster the other masters' slots keep flowing. Calls in flight are capped, so a
 * stall never grows a queue.
 *
 * On a Cluster every command names its keys (scripts are defined with numberOfKeys) and the keys
 * of one command share a hash tag, so each goes whole to the master of its slot; nothing is
 * pipelined (see BASE), so no batch can mix slots.
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
  /**
   * A node's connection errors and stalls (logged by the caller, not thrown): once when the node
   * starts failing, not at every reconnect attempt, until it answers again (onRecover).
   */
  onError?: (err: Error, node: string) => void;
  /** A node that had failed answers again. */
  onRecover?: (node: string) => void;
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
      // Not ioredis's Cluster ready check (CLUSTER INFO's cluster_state, sent right after the slot
      // map is read): it went to a node still connecting, which a Cluster without an offline queue
      // refuses ("Connection is closed"), and the failed check closed the whole client and started
      // over, again and again on a loaded machine (measured: a gateway not ready after 5 s). Ready
      // here means every master's own connection is ready (RedisCaller.ready); a slot whose master
      // is down answers CLUSTERDOWN to its own commands only.
      enableReadyCheck: false,
      // Off, as for one Redis (BASE): ioredis groups a Cluster's auto-pipeline by the node of each
      // command's first argument and refuses a whole batch whose keys span masters.
      enableAutoPipelining: false,
      clusterRetryStrategy: (times) => Math.min(50 * 2 ** times, 2_000),
      // A node whose connection fails reconnects with the same backoff instead of ending. ioredis
      // ends it otherwise (no retry), and once every node has ended the Cluster itself closes and
      // starts over from the seeds: on a loaded machine a slow connect or two closed a healthy
      // Cluster client for seconds. A node that no longer serves slots is still dropped at the
      // next slot-map refresh.
      clusterNodeRetryStrategy: (times: number) => Math.min(50 * 2 ** times, 2_000),
      // The slot map is read on a connection of its own: as long to answer as a connect may take
      // (ioredis's 1 s, missed under load, failed the whole start and closed the client).
      slotsRefreshTimeout: 2_000,
      // A failed master's slots move to its replica; a command for them fails fast (its node is
      // reconnecting) until the slot map is read again: at most this long after the failover.
      slotsRefreshInterval: 1_000,
      // Never re-sent: ioredis re-sends a command whose node connection closed (it may have run
      // there). A redirection (MOVED, ASK) or TRYAGAIN / CLUSTERDOWN is still followed: the
      // command did not run.
      retryDelayOnFailover: 0,
      redisOptions: { ...BASE, ...auth },
    });
  if (!name)
    throw new Error(
      '--redis: a redis-sentinel:// URL names the master: redis-sentinel://host:26379/mymaster',
    );
  return new Redis({ ...BASE, ...auth, sentinels: hostsOf(hosts, 26379), name, db: db ? Number(db) : 0 });
}

/** host:port of one node connection (a Sentinel-found master: the name it is monitored by). */
function nameOf(node: Redis): string {
  const o = node.options;
  return o.sentinels ? `sentinel master ${o.name}` : `${o.host ?? 'localhost'}:${o.port ?? 6379}`;
}

/** Commands sent on this connection and not yet answered (ioredis's own queue). */
const waitingOn = (node: Redis): number =>
  (node as unknown as { commandQueue: { length: number } }).commandQueue.length;

export class RedisCaller<Commands> {
  readonly client: RedisClient;
  readonly #timeoutMs: number;
  readonly #maxInFlight: number;
  readonly #observe: NonNullable<RedisConnectionOptions['observe']>;
  readonly #onError: NonNullable<RedisConnectionOptions['onError']>;
  readonly #onRecover: NonNullable<RedisConnectionOptions['onRecover']>;
  /** The first error of each failing node, until it answers again. */
  readonly #failing = new Map<string, string>();
  /** Node connections being probed after a missed deadline (one probe at a time per node). */
  readonly #probing = new WeakSet<Redis>();
  #inFlight = 0;
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
    this.#onRecover = opts.onRecover ?? (() => {});
    if (client instanceof Cluster) {
      // The Cluster's own errors (no node answers the slot map) and each node's, apart.
      client.on('error', (err: Error) => this.#nodeFailed('cluster', err));
      client.on('ready', () => this.#nodeAnswers('cluster'));
      client.on('node error', (err: Error, node: string) => this.#nodeFailed(node, err));
      client.on('+node', (node: Redis) => {
        node.on('ready', () => this.#nodeAnswers(nameOf(node)));
        // ioredis connects a Cluster's node at its first command and refuses the commands that
        // come while it connects (they would be re-sent, which we never do): connect it now.
        if (node.status === 'wait') node.connect().catch(() => {});
      });
    } else {
      client.on('error', (err: Error) => this.#nodeFailed(nameOf(client), err));
      client.on('ready', () => this.#nodeAnswers(nameOf(client)));
    }
  }

  #nodeFailed(node: string, err: Error): void {
    // A node away alternates errors (refused, closed) at each attempt: one line until it is back.
    if (this.#failing.has(node)) return;
    this.#failing.set(node, err.message);
    this.#onError(err, node);
  }

  #nodeAnswers(node: string): void {
    if (this.#failing.delete(node)) this.#onRecover(node);
  }

  get inFlight(): number {
    return this.#inFlight;
  }

  /** Waits (bounded) for the first connection; false when Redis did not answer in time. */
  async ready(timeoutMs: number): Promise<boolean> {
    const until = Date.now() + timeoutMs;
    while (!this.#ready()) {
      if (Date.now() >= until || this.client.status === 'end') return false;
      await delay(20);
    }
    return true;
  }

  /** Connected; on a Cluster, to every master too. */
  #ready(): boolean {
    const c = this.client;
    if (c.status !== 'ready') return false;
    return !(c instanceof Cluster) || c.nodes('master').every((n) => n.status === 'ready');
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

  /**
   * A call missed its deadline: each node connection with commands waiting gets a PING under the
   * same deadline, and one that answers nothing (stalled) is dropped and reconnected, alone.
   */
  #stalled(timeoutMs: number): void {
    const nodes = this.client instanceof Cluster ? this.client.nodes() : [this.client];
    for (const node of nodes) {
      if (node.status !== 'ready' || this.#probing.has(node) || waitingOn(node) === 0) continue;
      this.#probing.add(node);
      let answered = false;
      const done = () => {
        answered = true;
        clearTimeout(timer);
        this.#probing.delete(node);
      };
      const timer = setTimeout(() => {
        this.#probing.delete(node);
        if (answered || node.status !== 'ready') return;
        this.#nodeFailed(nameOf(node), new Error(`answered nothing for ${timeoutMs} ms: reconnecting`));
        node.disconnect(true);
      }, timeoutMs);
      // A refused PING (the connection failed meanwhile) is an answer: ioredis is on it already.
      node.ping().then(done, done);
    }
  }

  async close(): Promise<void> {
    try {
      await this.client.quit();
    } catch {
      this.client.disconnect();
    }
  }
}
