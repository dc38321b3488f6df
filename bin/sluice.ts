#!/usr/bin/env -S node --max-semi-space-size=16 ${SLUICE_NODE_FLAG}
/**
 * The sluice command: a dispatcher. Each command (bin/commands/) has its own flags, --help and
 * examples; what they share is in bin/lib/.
 */
import { controller } from './commands/controller.ts';
import { dataplane } from './commands/dataplane.ts';
import { migrate } from './commands/migrate.ts';
import { run } from './commands/run.ts';
import { validate } from './commands/validate.ts';
import { type Command, fail, helpText, version } from './lib/command.ts';

const COMMANDS: readonly Command[] = [run, validate, dataplane, controller, migrate];

const HELP = `sluice — a Kubernetes-native API gateway

Usage:
${COMMANDS.map((c) => `  ${c.usage}\n      ${c.summary}`).join('\n')}
  sluice <command> --help     that command's flags, with examples
  sluice --version

Shared by several commands:
  -f FILE|DIR (run, validate, migrate), --state-dir DIR and --workers N|auto (run, dataplane), --log-level LEVEL,
  --admin-token TOKEN / --admin-token-file FILE / env SLUICE_ADMIN_TOKEN (the admin API's bearer token)
`;

const [first, ...rest] = process.argv.slice(2);
const find = (name: string | undefined) => COMMANDS.find((c) => c.name === name);
if (first === undefined) {
  process.stdout.write(HELP);
  process.exit(2);
}
if (first === '--help' || first === '-h' || first === 'help') {
  const cmd = find(rest[0]);
  if (rest[0] !== undefined && !cmd) fail(`unknown command ${JSON.stringify(rest[0])} (see sluice --help)`);
  process.stdout.write(cmd ? helpText(cmd) : HELP);
  process.exit(0);
}
if (first === '--version') {
  process.stdout.write(`${version()}\n`);
  process.exit(0);
}
const cmd = find(first);
if (!cmd)
  fail(
    first.startsWith('-')
      ? `${first} goes after a command: sluice <command> ${first} (see sluice --help)`
      : `unknown command ${JSON.stringify(first)} (see sluice --help)`,
  );
await cmd.main(rest);
