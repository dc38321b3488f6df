/** The flags of a data-plane process, shared by `sluice run` and `sluice dataplane`, and the options they make. */
import { availableParallelism } from 'node:os';
import { DEFAULTS, type DataPlaneOptions } from '../../dataplane/main.ts';
import { type Flags, failIn, intFlag, type Values } from './command.ts';
import { ADMIN_TOKEN_FLAGS, adminToken, LOG_LEVEL_FLAG, logLevel } from './process.ts';

export const DATAPLANE_FLAGS = {
  port: { type: 'string', arg: 'N', help: `proxy port (default ${DEFAULTS.proxyPort})` },
  host: { type: 'string', arg: 'ADDR', help: `proxy address (default ${DEFAULTS.host})` },
  'https-port': {
    type: 'string',
    arg: 'N',
    help: [
      'also serve the proxy over TLS on this port (on --host): HTTP/1.1 and h2 (ALPN),',
      "certificates by SNI from the routes' spec.tls Secrets (default: no TLS listener)",
    ].join('\n'),
  },
  'tls-default-cert': {
    type: 'string',
    arg: 'FILE',
    help: 'PEM certificate (chain) the TLS listener presents when no route certificate covers the SNI',
  },
  'tls-default-key': { type: 'string', arg: 'FILE', help: 'the PEM key of --tls-default-cert' },
  'https-redirect-port': {
    type: 'string',
    arg: 'N',
    help: `HTTPS port in the Location of routes' httpsRedirect (default ${DEFAULTS.httpsRedirectPort}: none shown)`,
  },
  'admin-port': { type: 'string', arg: 'N', help: `admin port (default ${DEFAULTS.adminPort})` },
  'admin-host': { type: 'string', arg: 'ADDR', help: `admin address (default ${DEFAULTS.adminHost})` },
  ...ADMIN_TOKEN_FLAGS,
  'admin-tls-cert': {
    type: 'string',
    arg: 'FILE',
    help: 'serve the admin port over HTTPS with this PEM certificate (and --admin-tls-key)',
  },
  'admin-tls-key': { type: 'string', arg: 'FILE', help: 'the PEM key of --admin-tls-cert' },
  'state-dir': { type: 'string', arg: 'DIR', help: 'keep the last good snapshot here' },
  ...LOG_LEVEL_FLAG,
  'no-access-log': { type: 'boolean', help: 'no per-request log line' },
  'access-log-sample': {
    type: 'string',
    arg: 'RATIO',
    help: 'share of answered (< 400) requests logged, 0 to 1 (default 1); errors are always logged',
  },
  'analytics-consumers': {
    type: 'string',
    arg: 'N',
    help: 'per-consumer metrics with at most N consumer labels, the rest as "other" (default 0: off)',
  },
  'access-log-off': {
    type: 'string',
    arg: 'LIST',
    help: 'comma-separated route-id prefixes not logged (route/<ns>/<name>/), failures still are',
  },
  'trusted-proxies': {
    type: 'string',
    arg: 'LIST',
    help: 'comma-separated IPs/CIDRs whose X-Forwarded-*/Forwarded headers are kept',
  },
  'max-body-bytes': {
    type: 'string',
    arg: 'N',
    help: `request body limit (default ${DEFAULTS.maxBodyBytes})`,
  },
  'max-header-bytes': {
    type: 'string',
    arg: 'N',
    help: `request header limit (default ${DEFAULTS.maxHeaderBytes})`,
  },
  'drain-timeout-ms': {
    type: 'string',
    arg: 'N',
    help: `on SIGTERM, time allowed for in-flight requests (default ${DEFAULTS.drainTimeoutMs})`,
  },
  'max-in-flight': {
    type: 'string',
    arg: 'N',
    help: [
      'requests in flight per process (each worker of --workers its own; WebSockets not counted);',
      `past it a request gets 503 + Retry-After at once (default ${DEFAULTS.maxInFlight}; 0: no bound)`,
    ].join('\n'),
  },
  'adaptive-concurrency': {
    type: 'boolean',
    help: 'below --max-in-flight, shed past an adaptive limit that falls as latency rises (default off)',
  },
  'max-websockets': {
    type: 'string',
    arg: 'N',
    help: `open WebSockets per process; past it an upgrade gets 503 (default ${DEFAULTS.maxWebSockets})`,
  },
  'ws-idle-timeout-ms': {
    type: 'string',
    arg: 'N',
    help: `close a WebSocket (1001) after no frame either way for this long; 0: never (default ${DEFAULTS.wsIdleTimeoutMs})`,
  },
  'ws-max-message-bytes': {
    type: 'string',
    arg: 'N',
    help: `close a WebSocket (1009) on a larger message; 0: no limit (default ${DEFAULTS.wsMaxMessageBytes})`,
  },
  redis: {
    type: 'string',
    arg: 'URL',
    help: [
      'shared state for every replica: redis://host:6379[/db], rediss://…,',
      'redis-sentinel://host:26379[,host…]/master, redis-cluster://host:7000[,host…]',
      '(or env SLUICE_REDIS_URL); without it, stores are in memory (one process)',
    ].join('\n'),
  },
  'redis-timeout-ms': {
    type: 'string',
    arg: 'N',
    help: `deadline of one Redis round trip; past it idempotent requests get 503 (default ${DEFAULTS.redisTimeoutMs})`,
  },
  'redis-prefix': {
    type: 'string',
    arg: 'P',
    help: `prefix of every Redis key (default ${DEFAULTS.redisPrefix})`,
  },
  workers: {
    type: 'string',
    arg: 'N|auto',
    help: [
      'processes serving the proxy port (default 1: one process, no cluster);',
      '0 or auto: one per CPU. The admin port, state and metrics stay one.',
    ].join('\n'),
  },
  'replicas-hint': {
    type: 'string',
    arg: 'N',
    help: [
      'data-plane replicas sharing Redis limits: when Redis is down, a rate limit',
      `with failMode open is counted here at limit ÷ N (default ${DEFAULTS.replicasHint})`,
    ].join('\n'),
  },
} as const satisfies Flags;

export function dataplaneOptions(
  cmd: string,
  values: Values<typeof DATAPLANE_FLAGS>,
  stateDirDefault: string | null,
): Partial<DataPlaneOptions> {
  const int = (name: keyof typeof values & string, fallback: number) =>
    intFlag(cmd, values[name] as string | undefined, name, fallback);
  return {
    proxyPort: int('port', DEFAULTS.proxyPort),
    host: values.host ?? DEFAULTS.host,
    httpsPort: values['https-port'] === undefined ? null : int('https-port', 0),
    tlsDefault: pemPair(cmd, values, 'tls-default'),
    httpsRedirectPort: int('https-redirect-port', DEFAULTS.httpsRedirectPort),
    adminPort: int('admin-port', DEFAULTS.adminPort),
    adminHost: values['admin-host'] ?? DEFAULTS.adminHost,
    adminToken: adminToken(cmd, values),
    stateDir: values['state-dir'] ?? stateDirDefault,
    logLevel: logLevel(cmd, values),
    accessLog: !values['no-access-log'],
    accessLogSample: values['access-log-sample'] === undefined ? 1 : ratio(cmd, values['access-log-sample']),
    analyticsConsumers: int('analytics-consumers', 0),
    accessLogOff:
      values['access-log-off']
        ?.split(',')
        .map((s) => s.trim())
        .filter(Boolean) ?? [],
    trustedProxies:
      values['trusted-proxies']
        ?.split(',')
        .map((s) => s.trim())
        .filter(Boolean) ?? [],
    maxBodyBytes: int('max-body-bytes', DEFAULTS.maxBodyBytes),
    maxHeaderBytes: int('max-header-bytes', DEFAULTS.maxHeaderBytes),
    drainTimeoutMs: int('drain-timeout-ms', DEFAULTS.drainTimeoutMs),
    maxInFlight: int('max-in-flight', DEFAULTS.maxInFlight),
    adaptiveConcurrency: values['adaptive-concurrency'] === true,
    maxWebSockets: int('max-websockets', DEFAULTS.maxWebSockets),
    wsIdleTimeoutMs: int('ws-idle-timeout-ms', DEFAULTS.wsIdleTimeoutMs),
    wsMaxMessageBytes: int('ws-max-message-bytes', DEFAULTS.wsMaxMessageBytes),
    adminTls: pemPair(cmd, values, 'admin-tls'),
    redisUrl: values.redis ?? (process.env.SLUICE_REDIS_URL || null),
    redisTimeoutMs: int('redis-timeout-ms', DEFAULTS.redisTimeoutMs),
    redisPrefix: values['redis-prefix'] ?? DEFAULTS.redisPrefix,
    replicasHint: int('replicas-hint', DEFAULTS.replicasHint),
  };
}

/** --<prefix>-cert and --<prefix>-key: both or neither. */
function pemPair(
  cmd: string,
  values: Values<typeof DATAPLANE_FLAGS>,
  prefix: 'admin-tls' | 'tls-default',
): { certFile: string; keyFile: string } | undefined {
  const cert = values[`${prefix}-cert`];
  const key = values[`${prefix}-key`];
  if (!cert && !key) return undefined;
  if (!cert || !key) failIn(cmd, `--${prefix}-cert and --${prefix}-key go together`);
  return { certFile: cert, keyFile: key };
}

/** --workers: 1 by default; 0 or auto = os.availableParallelism(); anything else but N ≥ 1 exits 2. */
export function workersFlag(cmd: string, values: { workers?: string }): number {
  if (values.workers === 'auto') return availableParallelism();
  const n = intFlag(cmd, values.workers, 'workers', 1);
  return n === 0 ? availableParallelism() : n;
}

/** --access-log-sample: a number from 0 to 1; anything else exits 2. */
function ratio(cmd: string, value: string): number {
  const n = Number(value);
  if (value.trim() === '' || !(n >= 0 && n <= 1))
    failIn(cmd, `--access-log-sample must be a number from 0 to 1, not ${value}`);
  return n;
}
