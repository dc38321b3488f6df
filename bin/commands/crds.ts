/** `sluice crds`: print the CRDs this binary serves, for `kubectl apply` (Helm never upgrades crds/). */
import { renderCrds } from '../../controller/api/crds.ts';
import { type Command, parseCommand } from '../lib/command.ts';

const flags = {} as const;

export const crds: Command<typeof flags> = {
  name: 'crds',
  summary: "print this version's CustomResourceDefinitions (to install or upgrade them)",
  usage: 'sluice crds [> FILE]',
  about: [
    'Prints the GatewayRoute and GatewayPlugin CRDs as YAML documents, generated from the same',
    "schemas as the controller that reads them (the files of crds/ and the chart's crds/ are",
    "the same text). Helm installs a chart's crds/ on the first install only and never upgrades",
    'them: apply these before `helm upgrade` to a version whose CRDs changed. Server-side apply',
    '(the CRDs are large) with --force-conflicts: the fields Helm created are owned by its field',
    'manager, and an upgrade changes some of them.',
  ].join('\n'),
  flags,
  examples: [
    'sluice crds | kubectl apply --server-side --force-conflicts -f -',
    'docker run --rm ghcr.io/sluice-dev/sluice:0.1.0 crds | kubectl apply --server-side --force-conflicts -f -',
    'sluice crds | kubectl diff --server-side --force-conflicts -f -     # what an upgrade would change',
  ],
  async main(argv) {
    parseCommand(crds, argv);
    // `sluice crds | head`: the reader leaving early is no failure.
    process.stdout.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'EPIPE') process.exit(0);
      throw err;
    });
    const files = Object.entries(renderCrds())
      .filter(([path]) => path.startsWith('crds/'))
      .map(([, text]) => text);
    process.stdout.write(files.join('---\n'));
  },
};
