/**
 * Wiring of one data-plane process: metrics, logs, pools, the runtime holder, the proxy and
 * admin servers, and the last good snapshot on disk. Used by `sluice run` (standalone) and
 * `sluice dataplane` (cluster, later), and by the tests, which start it in-process.
 */
import { startTracing } from './observability/tracing.ts';
import { randomBytes } from 'node:crypto';
import { type AdminTokens, tokenList } from './config/admin-auth.ts';
import { type Stats, unwatchFile, watchFile } from 'node:fs';
import { readFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import type { BlockList } from 'node:net';
import { cidrList, cidrProblem } from './config/cidr.ts';
import { createSecureContext, type Server as TlsServer } from 'node:tls';
import { setFlagsFromString } from 'node:v8';
import type { Logger } from 'pino';
import type { Snapshot } from './config/route-table.ts';
import { CONFIG_MAX_BYTES } from './config/limits.ts';
import { Metrics } from './observability/metrics.ts';
import { createLogger } from './observability/log.ts';
import { declaredStores, withPluginMetrics } from './runtime/declared.ts';
import { RuntimeHolder } from './runtime/holder.ts';
import { type AdminState, createAdminServer, holderAdminState } from './server/admin-server.ts';
import type { FastifyInstance } from 'fastify';
import { InFlight } from './server/in-flight.ts';
import { ListenerPorts, type ListenerState } from './server/listener-ports.ts';
import { createProxyServer } from './server/proxy-server.ts';
import { createSecureProxyServer } from './server/secure-server.ts';
import { WebSocketSlots } from './server/websocket.ts';
import { Background } from './pipeline/background.ts';
import { LastGood } from './state/last-good.ts';
import { openStores, type Stores } from './stores/open-stores.ts';
import { PoolRegistry } from './upstream/pools.ts';

export interface DataPlaneOptions {
  host: string;
  proxyPort: number;
  adminHost: string;
  adminPort: number;
  /** Where the last good snapshot is kept; null = nowhere. */
  stateDir: string | null;
  logLevel: string;
  accessLog: boolean;
  /** The share of answered (< 400) requests logged, 0 to 1; errors and refusals are always logged. */
  accessLogSample?: number;
  /** Route-id prefixes not logged (failures still are). */
  accessLogOff?: string[];
  /** Per-consumer analytics metrics with at most this many consumer labels (then "other"); 0 (default): off. */
  analyticsConsumers?: number;
  /** A cluster worker: the primary names the analytics consumers (cluster/consumer-names.ts); absent: this process. */
  askConsumer?: (consumer: string) => void;
  /** A cluster worker: tells the primary its Gateway listener ports' state (GET /config is the primary's). */
  onListeners?: (states: ListenerState[]) => void;
  /** The environment read for OTEL_* (tracing starts only when it configures an OTLP endpoint); default process.env. */
  otelEnv?: NodeJS.ProcessEnv;
  /**
   * Bearer token for PUT /config (or the tokens valid now, newest first: a token file during a
   * rotation); a random one is generated (and logged as generated, not shown) when empty.
   */
  adminToken: AdminTokens;
  trustedProxies: string[];
  maxBodyBytes: number;
  maxHeaderBytes: number;
  drainTimeoutMs: number;
  /** Idle time after which a kept-alive connection (HTTP/1.1, or an h2 session without a stream) is closed. */
  keepAliveTimeoutMs: number;
  /** The TLS listener of the proxy (HTTP/1.1 and h2); null = none. */
  httpsPort: number | null;
  /** PEM files of the certificate the TLS listener presents when no route's certificate covers the SNI. */
  tlsDefault?: { certFile: string; keyFile: string };
  /** The HTTPS port clients reach, in routes' httpsRedirect Locations (443 is left out). */
  httpsRedirectPort: number;
  /** PEM files: serve the admin port over HTTPS. */
  adminTls?: { certFile: string; keyFile: string };
  /** How often the admin certificate's files are checked for a change (then served to new connections); default 10 s. */
  adminTlsReloadMs?: number;
  /** Redis URL for shared state (idempotency records); null = in-memory stores (one process only). */
  redisUrl: string | null;
  /** Deadline of one Redis round trip; past it an idempotent request gets 503. */
  redisTimeoutMs: number;
  /** Key prefix in Redis (several gateways, or tests, can share one Redis). */
  redisPrefix: string;
  /** Replicas sharing Redis limits (for the fail-open fallback: limit ÷ this per process). */
  replicasHint: number;
  /** Open WebSockets this process allows (handshakes in progress included); past it an upgrade gets 503. */
  maxWebSockets: number;
  /** A WebSocket with no frame either way for this long is closed (1001); 0 = never. */
  wsIdleTimeoutMs: number;
  /** The largest WebSocket message (the sum of its frames' payloads); past it the socket is closed (1009); 0 = no limit. */
  wsMaxMessageBytes: number;
  /** Requests this process has in flight at most (0: no bound); past it a request gets 503 SLC_ERR_OVERLOADED (server/in-flight.ts). */
  maxInFlight: number;
  /** Below maxInFlight, an adaptive limit on observed latency (server/adaptive-limit.ts). */
  adaptiveConcurrency: boolean;
  /** A snapshot to start with (standalone mode); otherwise the last good one from stateDir. */
  initialSnapshot?: unknown;
  /** initialSnapshot was validated already (by a cluster primary, once for every worker). */
  prevalidated?: boolean;
  /** Serve the admin port; false in a cluster worker (the primary serves it). */
  admin?: boolean;
  log?: Logger;
}

export const DEFAULTS: DataPlaneOptions = {
  host: '0.0.0.0',
  proxyPort: 8080,
  httpsPort: null,
  httpsRedirectPort: 443,
  adminHost: '127.0.0.1',
  adminPort: 9901,
  stateDir: null,
  logLevel: 'info',
  accessLog: true,
  adminToken: '',
  trustedProxies: [],
  maxBodyBytes: 10 * 1024 * 1024,
  maxHeaderBytes: 32 * 1024,
  drainTimeoutMs: 30_000,
  keepAliveTimeoutMs: 72_000,
  redisUrl: null,
  redisTimeoutMs: 1_000,
  redisPrefix: 'sluice:',
  replicasHint: 1,
  maxWebSockets: 10_000,
  wsIdleTimeoutMs: 300_000,
  wsMaxMessageBytes: 1024 * 1024,
  // Far above what one process serves well (a core proxies some 10-20k req/s, so 10,000 in
  // flight means seconds of queue), yet a bound on memory: each request in flight holds its
  // request, response, upstream request and buffers, a few tens of KB at most, so ~100s of MB at
  // worst. It is the backstop against an unbounded queue; --adaptive-concurrency, or a lower
  // value measured for the routes served, sheds earlier.
  maxInFlight: 10_000,
  adaptiveConcurrency: false,
};

export interface DataPlane {
  proxyUrl: string;
  /** https://… of the TLS listener; '' when there is none. */
  httpsUrl: string;
  adminUrl: string;
  adminToken: string;
  holder: RuntimeHolder;
  /** The Gateway listener ports of the running snapshot (server/listener-ports.ts). */
  listenerPorts: ListenerPorts;
  metrics: Metrics;
  log: Logger;
  stores: Stores;
  /** Stops accepting, lets in-flight requests finish (bounded by drainTimeoutMs), closes pools. */
  close(): Promise<void>;
}

export function parseTrustedProxies(list: string[]): BlockList | null {
  if (!list.length) return null;
  for (const entry of list) {
    const problem = cidrProblem(entry);
    if (problem) throw new Error(`--trusted-proxies: ${JSON.stringify(entry)} ${problem}`);
  }
  return cidrList(list);
}

export async function startDataPlane(partial: Partial<DataPlaneOptions>): Promise<DataPlane> {
  // V8's allocation-site pretenuring misjudges the proxy: during warm-up a few allocation sites
  // of the request path see their objects survive a scavenge, V8 then allocates them straight
  // into the old generation, which fills at ~35 MB/s and costs a 9–17 ms mark-compact every
  // ~2 s: that was the p99 under load. Measured with --trace-gc under wrk -c50 (one core): with
  // it off, 0–1 mark-compact per 10 s instead of 5, scavenges ≤ 2.5 ms instead of ~15, p99
  // 20.5 → 5.4 ms, +8 % req/s. The flag is read at each GC, so setting it here takes effect.
  setFlagsFromString('--no-allocation-site-pretenuring');
  const o: DataPlaneOptions = { ...DEFAULTS, ...partial };
  const log = o.log ?? createLogger(o.logLevel);
  const metrics = withPluginMetrics(
    new Metrics({ analyticsConsumers: o.analyticsConsumers, askConsumer: o.askConsumer }),
  );
  const pools = new PoolRegistry({
    onCircuit: (id, state) => metrics.circuitState(id, state),
    onEndpoints: (id, counts) => metrics.upstreamEndpoints(id, counts),
  });
  const lastGood = o.stateDir ? new LastGood(o.stateDir) : null;
  const stores = await openStores(o, metrics, log, declaredStores());
  const background = new Background();
  const tracing = startTracing(o.otelEnv ?? process.env);
  // Made once the proxy port listens; until then the initial snapshot's ports wait for it.
  let listenerPorts: ListenerPorts | null = null;
  const holder = new RuntimeHolder(
    pools,
    {
      log,
      metrics,
      limits: {
        maxBodyBytes: o.maxBodyBytes,
        replicasHint: Math.max(1, o.replicasHint),
        websocket: { idleTimeoutMs: o.wsIdleTimeoutMs, maxMessageBytes: o.wsMaxMessageBytes },
      },
      accessLog: o.accessLog,
      accessLogSample: o.accessLogSample,
      accessLogOff: o.accessLogOff,
      tracing,
      stores,
      background,
      httpsRedirectPort: o.httpsRedirectPort,
    },
    (s) => {
      log.info({ hash: s.hash, routes: s.table.routes.length }, 'configuration applied');
      listenerPorts?.update();
      lastGood?.save(s).catch((err) => log.error({ err }, 'could not persist the last good snapshot'));
    },
  );

  const initial = o.initialSnapshot ?? (await lastGood?.load()) ?? null;
  if (initial !== null) {
    const r = o.prevalidated ? holder.applyValid(initial as Snapshot) : holder.apply(initial);
    if (r.result === 'rejected') {
      if (o.initialSnapshot !== undefined)
        throw new Error(`invalid configuration: ${JSON.stringify(r.errors)}`);
      log.warn({ errors: r.errors }, 'the persisted snapshot is invalid; waiting for a new one');
    }
  }

  const ingress = {
    trustedProxies: parseTrustedProxies(o.trustedProxies),
    maxBodyBytes: o.maxBodyBytes,
    proto: 'http' as const,
  };
  const serverOpts = {
    ...ingress,
    maxHeaderBytes: o.maxHeaderBytes,
    requestTimeoutMs: 300_000,
    keepAliveTimeoutMs: o.keepAliveTimeoutMs,
    webSockets: new WebSocketSlots(o.maxWebSockets),
    inFlight: new InFlight(o.maxInFlight || Number.POSITIVE_INFINITY, o.adaptiveConcurrency),
  };
  const observers = { metrics, log, accessLog: o.accessLog, tracing };
  const proxy = createProxyServer(holder, serverOpts, observers);
  await proxy.listen({ host: o.host, port: o.proxyPort });
  const secure =
    o.httpsPort === null
      ? null
      : createSecureProxyServer(
          holder,
          { ...serverOpts, defaultCertificate: o.tlsDefault ? await readPemPair(o.tlsDefault) : null },
          observers,
        );
  try {
    await secure?.listen({ host: o.host, port: o.httpsPort! });
  } catch (err) {
    await proxy.close();
    throw err;
  }
  const listeners = secure === null ? [proxy] : [proxy, secure];
  const ports = new ListenerPorts(holder, {
    host: o.host,
    serverOpts,
    obs: observers,
    drainTimeoutMs: o.drainTimeoutMs,
    onChange: o.onListeners,
  });
  listenerPorts = ports;
  ports.update();
  // After the proxy port: /readyz answering means the proxy port is open.
  let draining = false;
  const admin =
    o.admin === false
      ? null
      : await startAdmin(
          holderAdminState(holder, metrics, stores, () => draining, ports),
          o,
          log,
        );
  const proxyUrl = urlOf(proxy.server.address() as AddressInfo);
  const httpsUrl = secure === null ? '' : urlOf(secure.server.address() as AddressInfo, 'https');
  const adminUrl = admin?.url ?? '';
  const adminToken = admin?.token ?? '';
  log.info(
    { proxy: proxyUrl, ...(secure && { https: httpsUrl }), admin: adminUrl, hash: holder.hash },
    'sluice data plane listening',
  );

  let closing: Promise<void> | null = null;
  return {
    proxyUrl,
    httpsUrl,
    adminUrl,
    adminToken,
    holder,
    listenerPorts: ports,
    metrics,
    log,
    stores,
    close() {
      closing ??= (async () => {
        // /readyz answers 503 from now on (load balancers stop sending), /healthz stays 200; the
        // process goes as soon as its requests in flight are done, the drain timeout bounding it.
        draining = true;
        serverOpts.webSockets.goingAway();
        const drain = Promise.all([
          serverOpts.inFlight.drain(),
          ...listeners.map((l) => l.close()),
          ports.close(),
        ]);
        const timer = new Promise<void>((r) => setTimeout(r, o.drainTimeoutMs).unref());
        await Promise.race([drain, timer]);
        for (const l of listeners) l.closeAll();
        ports.closeAll();
        // Accepted asynchronous operations finish and store their result, within the same bound.
        await Promise.race([
          background.drain(),
          new Promise<void>((r) => setTimeout(r, o.drainTimeoutMs).unref()),
        ]);
        await admin?.server.close();
        await stores.close();
        holder.close();
        await pools.closeAll();
        await lastGood?.flushed();
        await tracing?.shutdown();
        log.flush?.();
      })();
      return closing;
    },
  };
}

/** A PEM certificate chain and key from files, checked to be usable (a bad pair fails at start, not per handshake). */
async function readPemPair(files: {
  certFile: string;
  keyFile: string;
}): Promise<{ cert: string; key: string }> {
  const pair = { cert: await readFile(files.certFile, 'utf8'), key: await readFile(files.keyFile, 'utf8') };
  try {
    createSecureContext(pair);
  } catch (err) {
    throw new Error(`--tls-default-cert/--tls-default-key: ${(err as Error).message}`);
  }
  return pair;
}

/** A listening address as a URL, 0.0.0.0 shown as 127.0.0.1. */
export function urlOf(a: AddressInfo, scheme = 'http'): string {
  return `${scheme}://${a.family === 'IPv6' ? `[${a.address}]` : a.address}:${a.port}`.replace(
    '0.0.0.0',
    '127.0.0.1',
  );
}

/**
 * The admin port on `state` (one process's holder, or a cluster primary): its token (generated
 * when none is given), TLS when configured, listening on adminHost:adminPort.
 */
export async function startAdmin(
  state: AdminState,
  o: Pick<DataPlaneOptions, 'adminToken' | 'adminTls' | 'adminTlsReloadMs' | 'adminHost' | 'adminPort'>,
  log: Logger,
): Promise<{ server: FastifyInstance; url: string; token: string }> {
  const given = tokenList(o.adminToken).length > 0;
  const tokens = given ? o.adminToken : randomBytes(24).toString('base64url');
  if (!given) log.info('no admin token given: generated one; PUT /config needs --admin-token to be usable');
  const token = tokenList(tokens)[0];
  const server = createAdminServer(state, {
    token: tokens,
    maxConfigBytes: CONFIG_MAX_BYTES,
    tls: o.adminTls && {
      cert: await readFile(o.adminTls.certFile, 'utf8'),
      key: await readFile(o.adminTls.keyFile, 'utf8'),
    },
  });
  if (o.adminTls) reloadAdminTls(server, o.adminTls, log, o.adminTlsReloadMs ?? 10_000);
  await server.listen({ host: o.adminHost, port: o.adminPort });
  return { server, url: urlOf(server.server.address() as AddressInfo, o.adminTls ? 'https' : 'http'), token };
}

/**
 * The admin certificate read again when its files change (cert-manager renews it into the
 * mounted Secret and the kubelet swaps the ..data link): new connections get the new one, no
 * restart. fs.watchFile polls stat, which follows the link and so sees the swap. A pair that does
 * not load (a key that is not the certificate's) is logged and the served one kept.
 */
function reloadAdminTls(
  server: FastifyInstance,
  pair: { certFile: string; keyFile: string },
  log: Logger,
  intervalMs: number,
): void {
  const reload = async () => {
    try {
      const [cert, key] = await Promise.all([
        readFile(pair.certFile, 'utf8'),
        readFile(pair.keyFile, 'utf8'),
      ]);
      (server.server as unknown as TlsServer).setSecureContext({ cert, key });
      log.info({ cert: pair.certFile }, 'admin certificate changed: serving the new one');
    } catch (err) {
      log.warn(
        { err, cert: pair.certFile },
        'admin certificate changed but does not load: still serving the old one',
      );
    }
  };
  const changed = (now: Stats, before: Stats) => {
    if (now.mtimeMs !== before.mtimeMs || now.ino !== before.ino || now.size !== before.size) void reload();
  };
  const files = [pair.certFile, pair.keyFile];
  for (const f of files) watchFile(f, { interval: intervalMs, persistent: false }, changed);
  server.addHook('onClose', async () => {
    for (const f of files) unwatchFile(f, changed);
  });
}
