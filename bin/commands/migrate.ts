/** `sluice migrate`: rewrite GatewayPlugins of the deprecated `spec.config` shape into the typed one. */
import { writeFile } from 'node:fs/promises';
import { migratePlugins } from '../../controller/api/migrate.ts';
import { STDIN } from '../../controller/source/file.ts';
import { type Command, failIn, parseCommand } from '../lib/command.ts';
import { joinDocuments, readAll } from '../lib/read-files.ts';

const flags = {
  file: {
    type: 'string',
    short: 'f',
    multiple: true,
    arg: 'FILE|DIR|-',
    help: 'a file, a directory of *.yaml/*.yml files, or - for standard input (repeatable)',
  },
  write: {
    type: 'boolean',
    short: 'w',
    help: 'rewrite the files in place (not with -); without it, the result goes to stdout',
  },
} as const;

export const migrate: Command<typeof flags> = {
  name: 'migrate',
  summary: 'rewrite GatewayPlugins from the deprecated spec.config to the typed field',
  usage: 'sluice migrate -f FILE|DIR|- [-f …] [-w]',
  about: [
    'A GatewayPlugin holds its configuration in the field named after its plugin',
    '(plugin: rate-limiting → spec.rateLimiting), which the API server checks at apply time.',
    'The untyped spec.config of earlier versions still works but is deprecated: this command',
    'renames it to that field. Only the key changes: comments, order and every other object',
    '(a Deployment in the same file) stay as written; `kind: List` (kubectl get -o yaml) is read too.',
    'Prints the result (or, with -w, rewrites each file that changed); the objects rewritten',
    'are listed on stderr. What cannot be rewritten (an unknown plugin, config beside the typed',
    'field, YAML that does not parse) is left as is, named on stderr, and exits 1.',
  ].join('\n'),
  flags,
  examples: [
    'sluice migrate -f gateway.yaml > gateway.new.yaml',
    'sluice migrate -w -f config/                          # every *.yaml and *.yml in config/, in place',
    'kubectl get gwp -A -o yaml | sluice migrate -f - | kubectl replace -f -   # what the cluster stores',
  ],
  async main(argv) {
    const values = parseCommand(migrate, argv);
    const paths = values.file ?? [];
    if (!paths.length) failIn('migrate', 'needs at least one -f FILE|DIR|-');
    if (values.write && paths.includes(STDIN)) failIn('migrate', '-w rewrites files; it cannot rewrite -');
    let failed = false;
    const outputs: string[] = [];
    for (const { file, text } of await readAll('migrate', paths)) {
      const r = migratePlugins(text);
      for (const p of r.problems) process.stderr.write(`sluice migrate: ${file}:${p.line}: ${p.message}\n`);
      failed ||= r.problems.length > 0;
      if (r.migrated.length)
        process.stderr.write(
          `sluice migrate: ${file}: ${r.migrated.length} GatewayPlugin(s): ${r.migrated.join(', ')}\n`,
        );
      if (!values.write) outputs.push(r.text);
      else if (r.text !== text) await writeFile(file, r.text);
    }
    if (!values.write) process.stdout.write(joinDocuments(outputs));
    if (failed) process.exit(1);
  },
};
