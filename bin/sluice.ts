#!/usr/bin/env node
/**
 * The sluice command. `sluice run` is standalone mode (YAML files, in-memory stores);
 * `sluice dataplane` waits for a controller's pushes and serves its last good snapshot meanwhile.
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { DEFAULTS, type DataPlane, type DataPlaneOptions, startDataPlane } from '../dataplane/main.ts';
import { type FileProblem, loadConfig } from '../dataplane/standalone.ts';
import { startController } from '../controller/main.ts';
import { createLogger } from '../dataplane/observability/log.ts';

const HELP = `sluice — a Kubernetes-native API gateway

Usage:
  sluice run -f FILE [-f FILE…] [options]   standalone: serve GatewayRoute/GatewayPlugin YAML from files
  sluice validate -f FILE [-f FILE…]         check files; print problems and the snapshot hash
  sluice dataplane [options]                 cluster data plane: serve the last good snapshot, take pushes on PUT /config
  sluice controller --dataplane-service NS/NAME [options]
                                             the Kubernetes controller: watch, build, push to data-plane pods
  sluice --help

Options (run, dataplane):
  -f, --file FILE          config file (repeatable; run and validate)
  --port N                 proxy port (default ${DEFAULTS.proxyPort})
  --host ADDR              proxy address (default ${DEFAULTS.host})
  --admin-port N           admin port (default ${DEFAULTS.adminPort})
  --admin-host ADDR        admin address (default ${DEFAULTS.adminHost})
  --admin-token TOKEN      bearer token for PUT /config (or env SLUICE_ADMIN_TOKEN,
                           or --admin-token-file); random when none is given
  --admin-token-file FILE  read the admin token from FILE (a mounted Secret)
  --admin-tls-cert FILE    serve the admin port over HTTPS with this PEM certificate (and --admin-tls-key FILE)
  --state-dir DIR          keep the last good snapshot here (default: .state for run, required for dataplane)
  --log-level LEVEL        trace, debug, info, warn, error, silent (default info)
  --no-access-log          no per-request log line
  --trusted-proxies LIST   comma-separated IPs/CIDRs whose X-Forwarded-*/Forwarded headers are kept
  --max-body-bytes N       request body limit (default ${DEFAULTS.maxBodyBytes})
  --max-header-bytes N     request header limit (default ${DEFAULTS.maxHeaderBytes})
  --drain-timeout-ms N     on SIGTERM, time allowed for in-flight requests (default ${DEFAULTS.drainTimeoutMs})
  --redis URL              shared state for every replica (idempotency records): redis://host:6379[/db],
                           rediss://…, redis-sentinel://host:26379[,host…]/master, redis-cluster://host:7000[,host…]
                           (or env SLUICE_REDIS_URL); without it, stores are in memory (one process)
  --redis-timeout-ms N     deadline of one Redis round trip; past it idempotent requests get 503
                           (default ${DEFAULTS.redisTimeoutMs})
  --redis-prefix P         prefix of every Redis key (default ${DEFAULTS.redisPrefix})
  --replicas-hint N        data-plane replicas sharing Redis limits: when Redis is down, a rate limit with
                           failMode open is counted here at limit ÷ N (default ${DEFAULTS.replicasHint})

Options (controller; the cluster comes from KUBECONFIG, else the in-cluster service account):
  --dataplane-service NS/NAME  the data plane's headless admin Service (its EndpointSlices list the pods)
  --admin-port-name NAME       port of that Service to push to (default admin; else its first port)
  --admin-scheme http|https    (default http)
  --admin-ca-file FILE         with https: the CA of the data planes' admin certificates
  --admin-tls-server-name NAME with https: the name in their certificate (pods are dialled by IP)
  --admin-token, --admin-token-file, SLUICE_ADMIN_TOKEN   the data planes' admin token
  --metrics-port N             /metrics, /healthz, /readyz (default 9902; --metrics-host, default 0.0.0.0)
  --lease-namespace NS         where the leader-election Lease lives (default: the service's namespace)
  --lease-name NAME            (default sluice-controller)
  --lease-seconds N            how long a dead leader blocks a standby (default 15)
  --identity ID                this replica's name in the Lease (default hostname-pid)
  --log-level LEVEL

Signals: SIGTERM/SIGINT stop accepting, finish in-flight requests, exit 0. SIGHUP (run) re-reads the files.
`;

function fail(message: string, code = 2): never {
  process.stderr.write(`sluice: ${message}\n`);
  process.exit(code);
}

function parse(argv: string[]) {
  try {
    return parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        file: { type: 'string', short: 'f', multiple: true },
        port: { type: 'string' },
        host: { type: 'string' },
        'admin-port': { type: 'string' },
        'admin-host': { type: 'string' },
        'admin-token': { type: 'string' },
        'admin-token-file': { type: 'string' },
        'admin-tls-cert': { type: 'string' },
        'admin-tls-key': { type: 'string' },
        'admin-ca-file': { type: 'string' },
        'admin-tls-server-name': { type: 'string' },
        'state-dir': { type: 'string' },
        'log-level': { type: 'string' },
        'no-access-log': { type: 'boolean' },
        'trusted-proxies': { type: 'string' },
        'max-body-bytes': { type: 'string' },
        'max-header-bytes': { type: 'string' },
        'drain-timeout-ms': { type: 'string' },
        redis: { type: 'string' },
        'dataplane-service': { type: 'string' },
        'admin-port-name': { type: 'string' },
        'admin-scheme': { type: 'string' },
        'metrics-port': { type: 'string' },
        'metrics-host': { type: 'string' },
        'lease-namespace': { type: 'string' },
        'lease-name': { type: 'string' },
        identity: { type: 'string' },
        'lease-seconds': { type: 'string' },
        'redis-timeout-ms': { type: 'string' },
        'redis-prefix': { type: 'string' },
        'replicas-hint': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (err) {
    fail(`${(err as Error).message}\n\n${HELP}`);
  }
}

type Values = ReturnType<typeof parse>['values'];

function int(values: Values, name: keyof Values, fallback: number): number {
  const raw = values[name];
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0) fail(`--${name} must be a whole number, not ${JSON.stringify(raw)}`);
  return n;
}

function options(values: Values, stateDirDefault: string | null): Partial<DataPlaneOptions> {
  const tokenFile = values['admin-token-file'];
  const token = tokenFile
    ? readFileSync(tokenFile, 'utf8').trim()
    : (values['admin-token'] ?? process.env.SLUICE_ADMIN_TOKEN ?? '');
  const level = values['log-level'] ?? DEFAULTS.logLevel;
  if (!['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'].includes(level))
    fail(`--log-level: unknown level ${level}`);
  return {
    proxyPort: int(values, 'port', DEFAULTS.proxyPort),
    host: values.host ?? DEFAULTS.host,
    adminPort: int(values, 'admin-port', DEFAULTS.adminPort),
    adminHost: values['admin-host'] ?? DEFAULTS.adminHost,
    adminToken: token,
    stateDir: values['state-dir'] ?? stateDirDefault,
    logLevel: level,
    accessLog: !values['no-access-log'],
    trustedProxies:
      values['trusted-proxies']
        ?.split(',')
        .map((s) => s.trim())
        .filter(Boolean) ?? [],
    maxBodyBytes: int(values, 'max-body-bytes', DEFAULTS.maxBodyBytes),
    maxHeaderBytes: int(values, 'max-header-bytes', DEFAULTS.maxHeaderBytes),
    drainTimeoutMs: int(values, 'drain-timeout-ms', DEFAULTS.drainTimeoutMs),
    adminTls: tlsFiles(values),
    redisUrl: values.redis ?? (process.env.SLUICE_REDIS_URL || null),
    redisTimeoutMs: int(values, 'redis-timeout-ms', DEFAULTS.redisTimeoutMs),
    redisPrefix: values['redis-prefix'] ?? DEFAULTS.redisPrefix,
    replicasHint: int(values, 'replicas-hint', DEFAULTS.replicasHint),
  };
}

function tlsFiles(values: Values): DataPlaneOptions['adminTls'] {
  const cert = values['admin-tls-cert'];
  const key = values['admin-tls-key'];
  if (!cert && !key) return undefined;
  if (!cert || !key) fail('--admin-tls-cert and --admin-tls-key go together');
  return { certFile: cert, keyFile: key };
}

function printProblems(problems: FileProblem[]): void {
  for (const p of problems)
    process.stderr.write(`  ${p.where}${p.field ? `: ${p.field}` : ''}: ${p.message}\n`);
}

function onSignals(dp: DataPlane, reload?: () => Promise<void>): void {
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    dp.log.info({ signal }, 'stopping: draining in-flight requests');
    dp.close().then(
      () => process.exit(0),
      (err) => {
        dp.log.error({ err }, 'error while stopping');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  if (reload) process.on('SIGHUP', () => void reload());
}

async function run(values: Values): Promise<void> {
  const files = values.file ?? [];
  if (!files.length) fail('run needs at least one -f FILE');
  const loaded = await loadConfig(files).catch((err: Error) => fail(err.message, 1));
  if (loaded.problems.length) {
    process.stderr.write(`sluice: the configuration has ${loaded.problems.length} problem(s):\n`);
    printProblems(loaded.problems);
    process.exit(1);
  }
  const dp = await startDataPlane({ ...options(values, '.state'), initialSnapshot: loaded.snapshot }).catch(
    (err: Error) => fail(err.message, 1),
  );
  onSignals(dp, async () => {
    const next = await loadConfig(files).catch((err: Error) => ({
      snapshot: null,
      problems: [{ where: files.join(', '), message: err.message }],
    }));
    if (next.problems.length || next.snapshot === null) {
      dp.log.error({ problems: next.problems }, 'reload refused: the running configuration stays');
      return;
    }
    const r = dp.holder.apply(next.snapshot);
    if (r.result === 'rejected')
      dp.log.error({ errors: r.errors }, 'reload refused: the running configuration stays');
  });
}

async function validate(values: Values): Promise<void> {
  const files = values.file ?? [];
  if (!files.length) fail('validate needs at least one -f FILE');
  const loaded = await loadConfig(files).catch((err: Error) => fail(err.message, 1));
  if (loaded.problems.length) {
    process.stderr.write(`sluice: ${loaded.problems.length} problem(s):\n`);
    printProblems(loaded.problems);
    process.exit(1);
  }
  process.stdout.write(`ok: ${loaded.snapshot.table.routes.length} routes, hash ${loaded.snapshot.hash}\n`);
}

async function dataplane(values: Values): Promise<void> {
  if (!values['state-dir']) fail('dataplane needs --state-dir (where the last good snapshot is kept)');
  const dp = await startDataPlane(options(values, null)).catch((err: Error) => fail(err.message, 1));
  onSignals(dp);
}

async function controller(values: Values): Promise<void> {
  const service = values['dataplane-service'];
  if (!service || !/^[^/]+\/[^/]+$/.test(service))
    fail('controller needs --dataplane-service NAMESPACE/NAME');
  const scheme = values['admin-scheme'] ?? 'http';
  if (scheme !== 'http' && scheme !== 'https') fail('--admin-scheme must be http or https');
  const o = options(values, null);
  if (!o.adminToken)
    fail(
      "controller needs the data planes' admin token (--admin-token, --admin-token-file or SLUICE_ADMIN_TOKEN)",
    );
  const log = createLogger(o.logLevel ?? 'info');
  const c = await startController({
    log,
    dataplaneService: service,
    adminPortName: values['admin-port-name'] ?? 'admin',
    adminScheme: scheme,
    adminToken: o.adminToken!,
    adminCaFile: values['admin-ca-file'],
    adminTlsServerName: values['admin-tls-server-name'],
    metricsHost: values['metrics-host'] ?? '0.0.0.0',
    metricsPort: int(values, 'metrics-port', 9902),
    leaseNamespace: values['lease-namespace'] ?? service.split('/')[0],
    leaseName: values['lease-name'] ?? 'sluice-controller',
    identity: values.identity,
    leaseSeconds: int(values, 'lease-seconds', 15),
  }).catch((err: Error) => fail(err.message, 1));
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'stopping: releasing the lease');
    c.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

const { values, positionals } = parse(process.argv.slice(2));
const command = positionals[0];
if (values.help || command === undefined || command === 'help') {
  process.stdout.write(HELP);
  process.exit(command === undefined && !values.help ? 2 : 0);
}
switch (command) {
  case 'run':
    await run(values);
    break;
  case 'validate':
    await validate(values);
    break;
  case 'dataplane':
    await dataplane(values);
    break;
  case 'controller':
    await controller(values);
    break;
  default:
    fail(`unknown command ${JSON.stringify(command)}\n\n${HELP}`);
}
