#!/usr/bin/env -S node --max-semi-space-size=16 ${SLUICE_NODE_FLAG}
/**
 * The sluice command: a dispatcher. Each command (bin/commands/) has its own flags, --help and
 * examples; what they share is in bin/lib/.
 */
import { type Command, fail, helpText, version } from './lib/command.ts';

/**
 * Each command's module, loaded only when that command runs (all of them for `sluice --help`):
 * a process loads its own role's code. Imported together, `sluice controller` loaded the data
 * plane's ~1,000 modules too (ioredis, @grpc/grpc-js, fastify, jose, fast-xml-parser, …), their
 * source and bytecode a fixed cost against its 192Mi limit.
 */
const LOADERS: Record<string, () => Promise<Command>> = {
  run: async () => (await import('./commands/run.ts')).run,
  validate: async () => (await import('./commands/validate.ts')).validate,
  dataplane: async () => (await import('./commands/dataplane.ts')).dataplane,
  controller: async () => (await import('./commands/controller.ts')).controller,
  migrate: async () => (await import('./commands/migrate.ts')).migrate,
  convert: async () => (await import('./commands/convert.ts')).convert,
  crds: async () => (await import('./commands/crds.ts')).crds,
};

const help = async () => {
  const commands = await Promise.all(Object.values(LOADERS).map((load) => load()));
  return `sluice — a Kubernetes-native API gateway

Usage:
${commands.map((c) => `  ${c.usage}\n      ${c.summary}`).join('\n')}
  sluice <command> --help     that command's flags, with examples
  sluice --version

Shared by several commands:
  -f FILE|DIR (run, validate, migrate, convert), --state-dir DIR and --workers N|auto (run, dataplane), --log-level LEVEL,
  --admin-token TOKEN / --admin-token-file FILE / env SLUICE_ADMIN_TOKEN (the admin API's bearer token)
`;
};

const [first, ...rest] = process.argv.slice(2);
const find = (name: string | undefined) =>
  name !== undefined && Object.hasOwn(LOADERS, name) ? LOADERS[name]() : undefined;
if (first === undefined) {
  // A usage error: the overview on stderr (stdout may be a pipe expecting output), status 2.
  process.stderr.write(await help());
  process.exit(2);
}
if (first === '--help' || first === '-h' || first === 'help') {
  const cmd = await find(rest[0]);
  if (rest[0] !== undefined && !cmd) fail(`unknown command ${JSON.stringify(rest[0])} (see sluice --help)`);
  process.stdout.write(cmd ? helpText(cmd) : await help());
  process.exit(0);
}
if (first === '--version') {
  process.stdout.write(`${version()}\n`);
  process.exit(0);
}
const cmd = await find(first);
if (!cmd)
  fail(
    first.startsWith('-')
      ? `${first} goes after a command: sluice <command> ${first} (see sluice --help)`
      : `unknown command ${JSON.stringify(first)} (see sluice --help)`,
  );
await cmd.main(rest);
