/** `sluice dataplane`: the cluster data plane. Serves its last good snapshot and takes the controller's pushes. */
import { type Command, failIn, parseCommand } from '../lib/command.ts';
import { DATAPLANE_FLAGS, dataplaneOptions, workersFlag } from '../lib/dataplane-flags.ts';
import { stopOnSignals } from '../lib/process.ts';
import { serve } from '../lib/serve.ts';

const flags = {
  ...DATAPLANE_FLAGS,
  'state-dir': { ...DATAPLANE_FLAGS['state-dir'], help: 'keep the last good snapshot here (required)' },
} as const;

export const dataplane: Command<typeof flags> = {
  name: 'dataplane',
  summary: 'cluster data plane: serve the last good snapshot, take pushes on PUT /config',
  usage: 'sluice dataplane --state-dir DIR [--admin-token-file FILE] [flags]',
  about: [
    'The proxy pods in a cluster. The controller pushes snapshots to the admin port (PUT /config,',
    'bearer token); each good one is kept in --state-dir and served at the next start until the',
    'controller is reachable again. Ready only once it has a snapshot.',
  ].join('\n'),
  flags,
  examples: [
    'sluice dataplane --state-dir /var/lib/sluice --admin-token-file /etc/sluice/token --admin-host 0.0.0.0',
    'sluice dataplane --state-dir /tmp/s --redis redis-sentinel://sentinel:26379/mymaster',
    'sluice dataplane --state-dir /var/lib/sluice --workers auto --redis redis://redis:6379   # one process per CPU',
  ],
  notes: [
    'Signals: SIGTERM/SIGINT drain: /readyz answers 503 at once, idle connections close, in-flight',
    'requests finish, and the process exits 0 as soon as none is left (bounded by --drain-timeout-ms).',
  ].join('\n'),
  async main(argv) {
    const values = parseCommand(dataplane, argv);
    if (!values['state-dir']) failIn('dataplane', 'needs --state-dir (where the last good snapshot is kept)');
    const options = dataplaneOptions('dataplane', values, null);
    const dp = await serve('dataplane', options, workersFlag('dataplane', values));
    stopOnSignals(dp.log, 'stopping: draining in-flight requests', () => dp.close());
  },
};
