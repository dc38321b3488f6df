/**
 * What every command shares: its flag table (node:util parseArgs, strict: an unknown flag is an
 * error naming the flag and the command, exit 2), its --help text generated from that table
 * (with examples), --version, and the way a command gives up.
 */
import { existsSync, readFileSync } from 'node:fs';
import { type ParseArgsOptionDescriptor, parseArgs } from 'node:util';

export interface Flag extends ParseArgsOptionDescriptor {
  /** The value's placeholder in --help (FILE, N); none for a boolean. */
  arg?: string;
  /** One line or several ("\n"). */
  help: string;
}

export type Flags = Record<string, Flag>;

/** The parsed values of a flag table: string, string[] (multiple) or boolean, each possibly undefined. */
export type Values<F extends Flags> = ReturnType<
  typeof parseArgs<{ options: F; strict: true; allowPositionals: false }>
>['values'];

export interface Command<F extends Flags = Flags> {
  name: string;
  /** One line, for `sluice --help`. */
  summary: string;
  /** The synopsis, e.g. "sluice run -f FILE|DIR [-f …] [flags]". */
  usage: string;
  /** What it does, a paragraph or two. */
  about: string;
  flags: F;
  /** Command lines, each optionally followed by "  # comment". */
  examples: string[];
  /** Anything after the examples (signals, environment). */
  notes?: string;
  main(argv: string[]): Promise<void>;
}

// bin/lib/ in a checkout, dist/bin/lib/ in the package and the image: package.json is two or
// three folders up.
const VERSION_FILES = ['../../package.json', '../../../package.json'].map((p) => new URL(p, import.meta.url));

export function version(): string {
  const file = VERSION_FILES.find((f) => existsSync(f));
  if (!file) return 'unknown';
  return (JSON.parse(readFileSync(file, 'utf8')) as { version: string }).version;
}

/** Prints "sluice: <message>" on stderr and exits; 2 = usage, 1 = failure. */
export function fail(message: string, code = 2): never {
  process.stderr.write(`sluice: ${message}\n`);
  process.exit(code);
}

/** The same, for a command: "sluice <command>: <message>". */
export function failIn(command: string, message: string, code = 2): never {
  process.stderr.write(`sluice ${command}: ${message}\n`);
  process.exit(code);
}

const STANDARD: Flags = {
  help: { type: 'boolean', short: 'h', help: 'this text' },
  version: { type: 'boolean', help: 'print the version' },
};

/** Parses a command's arguments; --help and --version print and exit 0; a bad flag exits 2. */
export function parseCommand<F extends Flags>(cmd: Command<F>, argv: string[]): Values<F> {
  let values: Record<string, unknown>;
  try {
    ({ values } = parseArgs({ args: argv, options: { ...cmd.flags, ...STANDARD }, strict: true }));
  } catch (err) {
    failIn(cmd.name, `${usageError(err as Error & { code?: string })} (see sluice ${cmd.name} --help)`);
  }
  if (values.help) {
    process.stdout.write(helpText(cmd));
    process.exit(0);
  }
  if (values.version) {
    process.stdout.write(`${version()}\n`);
    process.exit(0);
  }
  return values as Values<F>;
}

function usageError(err: Error & { code?: string }): string {
  const quoted = /'([^']+)'/.exec(err.message)?.[1];
  switch (err.code) {
    case 'ERR_PARSE_ARGS_UNKNOWN_OPTION':
      return `unknown flag ${quoted ?? err.message}`;
    case 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL':
      return `unexpected argument ${JSON.stringify(quoted ?? err.message)}`;
    default:
      return err.message;
  }
}

/** A whole number flag (ports, limits), or the fallback; anything else exits 2 naming the flag. */
export function intFlag(cmd: string, raw: string | undefined, name: string, fallback: number): number {
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (raw.trim() === '' || !Number.isInteger(n) || n < 0)
    failIn(cmd, `--${name} must be a whole number, not ${JSON.stringify(raw)}`);
  return n;
}

const COLUMN = 32;

export function helpText(cmd: Command): string {
  const flags = Object.entries({ ...cmd.flags, ...STANDARD }).map(([name, f]) => {
    const left = `${f.short ? `-${f.short}, ` : '    '}--${name}${f.arg ? ` ${f.arg}` : ''}`;
    const [first, ...rest] = f.help.split('\n');
    const pad = ' '.repeat(COLUMN);
    const head =
      left.length <= COLUMN - 4 ? `  ${left.padEnd(COLUMN - 2)}${first}` : `  ${left}\n${pad}${first}`;
    return [head, ...rest.map((l) => `${pad}${l}`)].join('\n');
  });
  return [
    `sluice ${cmd.name} — ${cmd.summary}`,
    '',
    'Usage:',
    `  ${cmd.usage}`,
    '',
    cmd.about,
    '',
    'Flags:',
    ...flags,
    '',
    'Examples:',
    ...cmd.examples.map((e) => `  ${e}`),
    ...(cmd.notes ? ['', cmd.notes] : []),
    '',
  ].join('\n');
}
