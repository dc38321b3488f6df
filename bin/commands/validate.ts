/** `sluice validate`: check config files as `sluice run` would read them; optionally print what they compile to. */
import { stringify } from 'yaml';
import { type Command, failIn, parseCommand } from '../lib/command.ts';
import { NO_ROUTES } from '../../dataplane/standalone.ts';
import { FILE_FLAG, loadOrExit } from '../lib/config-files.ts';

const flags = {
  ...FILE_FLAG,
  file: { ...FILE_FLAG.file, arg: 'FILE|DIR|-', help: `${FILE_FLAG.file.help}; - reads standard input` },
  output: {
    type: 'string',
    short: 'o',
    arg: 'json|yaml',
    help: 'print the compiled snapshot ({hash, table}: the route table a data plane runs)',
  },
} as const;

export const validate: Command<typeof flags> = {
  name: 'validate',
  summary: 'check config files; print problems, or the snapshot hash',
  usage: 'sluice validate -f FILE|DIR|- [-f …] [-o json|yaml]',
  about: [
    'Reads the files as `sluice run` would (GatewayRoute, GatewayPlugin and Secret objects) and',
    'compiles them. Problems name the file, the object and the field, and exit 1; so does an empty',
    'file (it holds no routes). Objects of kinds sluice does not own (a Deployment in the same',
    'file) are skipped with a note on stderr; files of GatewayPlugins alone get one too (run',
    'refuses a configuration without routes).',
    'Prints "ok: N routes, hash H" (on stderr with -o, whose output goes to stdout).',
  ].join('\n'),
  flags,
  examples: [
    'sluice validate -f examples/gateway.yaml',
    'sluice validate -f config/                       # every *.yaml and *.yml in config/',
    'kubectl kustomize overlays/prod | sluice validate -f -',
    'sluice validate -f gateway.yaml -o json | jq .table.routes[].id',
  ],
  async main(argv) {
    const values = parseCommand(validate, argv);
    const files = values.file ?? [];
    if (!files.length) failIn('validate', 'needs at least one -f FILE');
    const output = values.output;
    if (output !== undefined && output !== 'json' && output !== 'yaml')
      failIn('validate', `-o must be json or yaml, not ${JSON.stringify(output)}`);
    const { snapshot } = await loadOrExit(files, (n) => `sluice: ${n} problem(s):`);
    if (snapshot.table.routes.length === 0) process.stderr.write(`sluice: note: ${NO_ROUTES}\n`);
    const summary = `ok: ${snapshot.table.routes.length} routes, hash ${snapshot.hash}\n`;
    if (output === undefined) {
      process.stdout.write(summary);
      return;
    }
    process.stderr.write(summary);
    process.stdout.write(output === 'json' ? `${JSON.stringify(snapshot, null, 2)}\n` : stringify(snapshot));
  },
};
