/**
 * The cluster primary of `--workers N` (N > 1): N worker processes share the proxy port through
 * node:cluster (the primary accepts and hands connections round-robin); the primary serves no
 * proxy traffic. It owns what must be one per pod: the admin port, the state dir and the
 * configuration. A snapshot is validated once, here, then sent to every worker; PUT /config
 * answers once every worker applied it, and if one refuses (building its runtime failed) the
 * others go back to the previous snapshot, so workers never disagree. A worker that dies is
 * replaced, and the replacement gets the current snapshot before it listens. /readyz is 200
 * only when all N serve the current snapshot; /metrics sums the workers' registries with the
 * primary's (prom-client AggregatorRegistry; the config metrics are the primary's own), and the
 * per-consumer analytics' names are the primary's (consumer-names.ts).
 */
import cluster from 'node:cluster';
import { extname } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Logger } from 'pino';
import { AggregatorRegistry } from 'prom-client';
import { pluginManifest } from '../config/catalog.ts';
import type { Snapshot } from '../config/route-table.ts';
import { type TableError, validateSnapshot } from '../config/validate.ts';
import { DEFAULTS, type DataPlaneOptions, startAdmin } from '../main.ts';
import { createLogger } from '../observability/log.ts';
import { Metrics } from '../observability/metrics.ts';
import { withPluginMetrics } from '../runtime/declared.ts';
import type { ApplyResult } from '../runtime/holder.ts';
import type { AdminState } from '../server/admin-server.ts';
import type { ListenerState } from '../server/listener-ports.ts';
import { LastGood } from '../state/last-good.ts';
import { ConsumerNames } from './consumer-names.ts';
import { Member } from './member.ts';
import type { WorkerOptions } from './messages.ts';

const WORKER_MAIN = fileURLToPath(
  new URL(`./worker-main${extname(fileURLToPath(import.meta.url))}`, import.meta.url),
);
const START_TIMEOUT_MS = 30_000;
const APPLY_TIMEOUT_MS = 30_000;
const METRICS_TIMEOUT_MS = 5_000;
/** A worker that dies younger than this is restarted after a growing delay (100 ms … 10 s). */
const CRASH_LOOP_MS = 5_000;

export interface Cluster {
  adminUrl: string;
  adminToken: string;
  log: Logger;
  workers: number;
  /** The same path as PUT /config: validate once, apply on every worker. */
  apply(snapshot: unknown): Promise<ApplyResult>;
  /** Counts a configuration refused before it became a snapshot (sluice_config_loads_total{result="rejected"}). */
  refused(): void;
  /** Every worker drains (bounded by drainTimeoutMs) and exits; then the admin port closes. */
  close(): Promise<void>;
}

export async function startCluster(partial: Partial<DataPlaneOptions>, workers: number): Promise<Cluster> {
  const o: DataPlaneOptions = { ...DEFAULTS, ...partial };
  const log = o.log ?? createLogger(o.logLevel).child({ pid: process.pid, role: 'primary' });
  // The plugins' families too, as a worker has them: /metrics names them with no worker serving.
  const metrics = withPluginMetrics(new Metrics());
  const lastGood = o.stateDir ? new LastGood(o.stateDir) : null;
  const workerOptions: WorkerOptions = {
    ...strip(o),
    adminToken: '',
    stateDir: null,
    // The fail-open fallback of a Redis rate limit is counted per process: every worker of every replica.
    replicasHint: Math.max(1, o.replicasHint) * workers,
    // --max-websockets bounds the pod: each worker holds its share (connections are dealt round-robin).
    maxWebSockets: Math.ceil(o.maxWebSockets / workers),
  };
  const members = new Set<Member>();
  const consumerNames = o.analyticsConsumers ? new ConsumerNames(o.analyticsConsumers) : null;
  const serving = () => [...members].filter((m) => m.serving);
  let phase: 'starting' | 'running' | 'stopping' = 'starting';
  let current: Snapshot | null = null;
  let chain: Promise<unknown> = Promise.resolve();
  /** Applies and worker starts run one at a time: a starting worker never misses a snapshot. */
  const serial = <T>(job: () => Promise<T>): Promise<T> => {
    const r = chain.then(job);
    chain = r.catch(() => {});
    return r;
  };

  const check = (raw: unknown): TableError[] => {
    const errors = validateSnapshot(raw);
    return errors.length || o.redisUrl !== null ? errors : perWorkerState(raw as Snapshot, workers);
  };

  const applyAll = async (raw: unknown): Promise<ApplyResult> => {
    const errors = check(raw);
    if (errors.length) {
      metrics.configLoads.labels('rejected').inc();
      return { result: 'rejected', errors };
    }
    const s = raw as Snapshot;
    const targets = serving();
    if (s.hash === current?.hash && targets.every((m) => m.hash === s.hash)) {
      metrics.configLoads.labels('unchanged').inc();
      return { result: 'unchanged', hash: s.hash };
    }
    // null: the worker is gone (or was killed for not answering); its replacement starts on `current`.
    const outcome = (m: Member, snapshot: Snapshot) => m.apply(snapshot, APPLY_TIMEOUT_MS);
    const outcomes = await Promise.all(targets.map((m) => outcome(m, s)));
    const refused = outcomes.find((r) => r?.result === 'rejected');
    if (refused) {
      const previous = current;
      if (previous)
        await Promise.all(targets.filter((m) => m.hash === s.hash).map((m) => outcome(m, previous)));
      metrics.configLoads.labels('rejected').inc();
      return refused;
    }
    current = s;
    metrics.configHash(s.hash);
    metrics.configLoads.labels('applied').inc();
    log.info(
      { hash: s.hash, routes: s.table.routes.length, workers: targets.length },
      'configuration applied',
    );
    lastGood?.save(s).catch((err) => log.error({ err }, 'could not persist the last good snapshot'));
    return { result: 'applied', hash: s.hash };
  };

  let crashes = 0;
  const spawn = async (): Promise<string | null> => {
    const m = new Member(cluster.fork());
    members.add(m);
    if (consumerNames !== null)
      m.onConsumer = (name) => m.send({ sluice: 'consumer', name, ...consumerNames.decide(name) });
    void m.exited.then(({ code, signal }) => {
      members.delete(m);
      if (phase !== 'running') return;
      crashes = Date.now() - m.bornAt < CRASH_LOOP_MS ? crashes + 1 : 0;
      const delay = crashes ? Math.min(100 * 2 ** (crashes - 1), 10_000) : 0;
      log.warn({ workerPid: m.pid, code, signal, restartInMs: delay }, 'worker exited: starting a new one');
      setTimeout(() => {
        if (phase === 'running')
          void spawn().then((failure) => failure && log.error({ failure }, 'a new worker failed to start'));
      }, delay).unref();
    });
    if (!(await m.hello)) return `worker ${m.pid} exited before it started`;
    return serial(() => m.start(workerOptions, current, START_TIMEOUT_MS));
  };

  const stopWorkers = async () => {
    phase = 'stopping';
    for (const m of members) m.send({ sluice: 'stop' });
    const bound = new Promise<void>((r) => setTimeout(r, o.drainTimeoutMs * 2 + 5_000).unref());
    await Promise.race([Promise.all([...members].map((m) => m.exited)), bound]);
    for (const m of members) m.kill();
    await Promise.all([...members].map((m) => m.exited));
  };

  const initial = o.initialSnapshot ?? (await lastGood?.load()) ?? null;
  if (initial !== null) {
    const errors = check(initial);
    if (errors.length && o.initialSnapshot !== undefined)
      throw new Error(
        `invalid configuration: ${errors.map((e) => `${e.id ?? 'table'}: ${e.field}: ${e.message}`).join('; ')}`,
      );
    if (errors.length) log.warn({ errors }, 'the persisted snapshot is invalid; waiting for a new one');
    else {
      current = initial as Snapshot;
      metrics.configHash(current.hash);
      metrics.configLoads.labels('applied').inc();
      if (o.initialSnapshot !== undefined) void lastGood?.save(current).catch(() => {});
    }
  }

  cluster.setupPrimary({ exec: WORKER_MAIN, args: [] });
  const failures = (await Promise.all(Array.from({ length: workers }, spawn))).filter((f) => f !== null);
  if (failures.length) {
    await stopWorkers();
    throw new Error(failures[0]);
  }
  phase = 'running';

  const hash = () => {
    const up = serving();
    return current && up.length && up.every((m) => m.hash === current?.hash) ? current.hash : '';
  };
  const state: AdminState = {
    apply: (raw) => serial(() => applyAll(raw)),
    get hash() {
      return hash();
    },
    describe: () => {
      const listeners = podListeners(serving());
      return {
        hash: hash(),
        workers: [...members].map((m) => ({ pid: m.pid, hash: m.hash, serving: m.serving })),
        ...(listeners.length && { listeners }),
      };
    },
    snapshot: () => current,
    ready: () => hash() !== '' && serving().length === workers,
    // From the stop on (SIGTERM): every worker drains.
    draining: () => phase === 'stopping',
    metrics: async () => {
      const replies = await Promise.all(serving().map((m) => m.metrics(METRICS_TIMEOUT_MS)));
      const fromWorkers = replies.flatMap((r) => {
        if (r === null) return [];
        const own = r.filter((x) => !(x as { name: string }).name.startsWith('sluice_config_'));
        return [consumerNames === null ? own : consumerNames.relabel(own)];
      });
      const own = await metrics.registry.getMetricsAsJSON();
      return AggregatorRegistry.aggregate([own, ...fromWorkers]).metrics();
    },
    metricsContentType: metrics.registry.contentType,
    counted: (method, route, status) => metrics.adminRequests.labels(method, route, String(status)).inc(),
    // Each worker has its own memory cache: the purge goes to every one (with the Redis store
    // the first empties the shared keys and the others find none, so the sum stays right).
    purgeCache: async (prefix) => {
      const counts = await Promise.all(serving().map((m) => m.purge(prefix, METRICS_TIMEOUT_MS)));
      return counts.reduce((a, b) => a + b, 0);
    },
  };
  const admin = await startAdmin(state, o, log).catch(async (err: Error) => {
    await stopWorkers();
    throw err;
  });
  log.info(
    { workers, pids: serving().map((m) => m.pid), admin: admin.url, hash: hash() },
    'sluice data plane listening',
  );

  let closing: Promise<void> | null = null;
  return {
    adminUrl: admin.url,
    adminToken: admin.token,
    log,
    workers,
    apply: state.apply as Cluster['apply'],
    refused: () => metrics.configLoads.labels('rejected').inc(),
    close() {
      closing ??= (async () => {
        await stopWorkers();
        await admin.server.close();
        await lastGood?.flushed();
        log.flush?.();
      })();
      return closing;
    },
  };
}

/** The options a worker needs: plain data (no logger, no snapshot, no admin flags). */
function strip(o: DataPlaneOptions): WorkerOptions {
  const {
    log: _log,
    initialSnapshot: _initial,
    prevalidated: _pre,
    admin: _admin,
    askConsumer: _ask,
    onListeners: _listeners,
    ...rest
  } = o;
  return rest;
}

/**
 * The pod's Gateway listeners: each as its workers report it, bound only when every one has its
 * port bound (a connection may go to any), else the first error a worker reports.
 */
function podListeners(workers: Member[]): ListenerState[] {
  const by = new Map<string, ListenerState>();
  for (const w of workers)
    for (const l of w.listeners) {
      const seen = by.get(l.id);
      if (seen === undefined) by.set(l.id, { ...l });
      else if (seen.bound && !l.bound) by.set(l.id, { ...l });
    }
  return [...by.values()].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

/**
 * State kept in memory would be per worker: for idempotency records, a client's retry on a new
 * connection lands on another worker and executes again, the one thing the plugin exists to
 * prevent. So with N > 1 workers and no --redis, a snapshot with a route carrying a plugin
 * whose manifest declares `sharedState` is refused, naming it.
 */
export function perWorkerState(s: Snapshot, workers: number): TableError[] {
  return s.table.routes.flatMap((r) =>
    r.plugins.flatMap((p, i) => {
      const shared = pluginManifest(p.name)?.sharedState;
      return shared
        ? [
            {
              id: r.id,
              field: `plugins[${i}]`,
              message:
                `${shared.what} in memory would be per worker (--workers ${workers}): ${shared.why}; ` +
                'give --redis URL, or run one worker',
            },
          ]
        : [];
    }),
  );
}
