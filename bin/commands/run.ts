/**
 * `sluice run`: standalone mode. The same YAML a user would `kubectl apply`, served by one
 * process with in-memory stores (or Redis). Re-reads its files on SIGHUP and, with --watch, when
 * they change; an invalid edit is logged and the running configuration stays.
 */
import { loadConfig } from '../../dataplane/standalone.ts';
import { type Command, failIn, parseCommand } from '../lib/command.ts';
import { FILE_FLAG, loadOrExit, watchConfig } from '../lib/config-files.ts';
import { DATAPLANE_FLAGS, dataplaneOptions, workersFlag } from '../lib/dataplane-flags.ts';
import { stopOnSignals } from '../lib/process.ts';
import { serve } from '../lib/serve.ts';

const flags = {
  ...FILE_FLAG,
  watch: { type: 'boolean', help: 're-read the files when they change (as SIGHUP does)' },
  ...DATAPLANE_FLAGS,
  'state-dir': { ...DATAPLANE_FLAGS['state-dir'], help: 'keep the last good snapshot here (default .state)' },
} as const;

export const run: Command<typeof flags> = {
  name: 'run',
  summary: 'standalone: serve GatewayRoute/GatewayPlugin YAML from files',
  usage: 'sluice run -f FILE|DIR [-f …] [--watch] [flags]',
  about: [
    'Serves the GatewayRoute, GatewayPlugin and Secret objects of the files (a directory: its',
    '*.yaml and *.yml files) on the proxy port, with the admin API on 127.0.0.1. Stores are in',
    'memory unless --redis is given. An invalid configuration exits 1, naming file, object and',
    'field; objects of kinds sluice does not own are skipped with a note.',
  ].join('\n'),
  flags,
  examples: [
    'sluice run -f examples/gateway.yaml',
    'sluice run -f config/ --watch                    # reload on every save',
    'sluice run -f gateway.yaml --port 8000 --redis redis://127.0.0.1:6379',
    'sluice run -f gateway.yaml --workers auto --redis redis://127.0.0.1:6379   # one process per CPU',
  ],
  notes: [
    'Signals: SIGHUP re-reads the files (an invalid edit is refused, logged, counted in',
    'sluice_config_loads_total{result="rejected"}, and the running configuration stays; so is an',
    'empty file, one without routes, one over 32 MiB or nested deeper than 64 levels);',
    'SIGTERM/SIGINT drain: /readyz answers 503 at once, idle connections close, in-flight',
    'requests finish, and the process exits 0 as soon as none is left (bounded by',
    '--drain-timeout-ms).',
    '',
    'Workers: with --workers N > 1, each worker counts a local rate limit on its own (a limit L',
    'admits up to N×L; policy: redis is exact), and idempotency needs --redis (records in',
    'memory would be per worker, so such routes are refused without it).',
  ].join('\n'),
  async main(argv) {
    const values = parseCommand(run, argv);
    const files = values.file ?? [];
    if (!files.length) failIn('run', 'needs at least one -f FILE');
    if (files.includes('-')) failIn('run', '-f - (standard input) is for validate: run re-reads its files');
    const options = dataplaneOptions('run', values, '.state');
    const workers = workersFlag('run', values);
    const loaded = await loadOrExit(files, (n) => `sluice: the configuration has ${n} problem(s):`, {
      serve: true,
    });
    const dp = await serve('run', { ...options, initialSnapshot: loaded.snapshot }, workers);
    const reload = serialized(async (trigger: string) => {
      const next = await loadConfig(files, { serve: true }).catch((err: Error) => ({
        snapshot: null,
        problems: [{ where: files.join(', '), message: err.message }],
      }));
      if (next.problems.length || next.snapshot === null) {
        dp.refused();
        dp.log.error({ trigger, problems: next.problems }, 'reload refused: the running configuration stays');
        return;
      }
      const r = await dp.apply(next.snapshot);
      if (r.result === 'rejected')
        dp.log.error({ trigger, errors: r.errors }, 'reload refused: the running configuration stays');
      else dp.log.info({ trigger, hash: r.hash, result: r.result }, 'configuration reloaded');
    });
    process.on('SIGHUP', () => reload('SIGHUP'));
    const unwatch = values.watch
      ? watchConfig(files, () => reload('change'), {
          onError: (err) => dp.log.warn({ err: err.message }, 'watching the files failed'),
        })
      : () => {};
    stopOnSignals(dp.log, 'stopping: draining in-flight requests', async () => {
      unwatch();
      await dp.close();
    });
  },
};

/** One reload at a time; a trigger during one runs it once more after (with the latest trigger). */
function serialized(fn: (trigger: string) => Promise<void>): (trigger: string) => void {
  let running = false;
  let next: string | null = null;
  const go = async (trigger: string) => {
    running = true;
    try {
      await fn(trigger);
    } finally {
      running = false;
      if (next !== null) {
        const t = next;
        next = null;
        void go(t);
      }
    }
  };
  return (trigger) => {
    if (running) next = trigger;
    else void go(trigger);
  };
}
