/**
 * The config files of `sluice run` and `sluice validate`: loading them with problems and notes
 * on stderr, and watching them for changes (--watch).
 */
import { type FSWatcher, statSync, watch } from 'node:fs';
import { basename, dirname } from 'node:path';
import { isYamlFile } from '../../controller/source/file.ts';
import { type FileProblem, type LoadedConfig, loadConfig } from '../../dataplane/standalone.ts';

export const FILE_FLAG = {
  file: {
    type: 'string',
    short: 'f',
    multiple: true,
    arg: 'FILE|DIR',
    help: 'config file, or a directory of *.yaml/*.yml files (repeatable)',
  },
} as const;

export function formatProblems(problems: readonly FileProblem[]): string {
  return problems.map((p) => `  ${p.where}${p.field ? `: ${p.field}` : ''}: ${p.message}\n`).join('');
}

/** Loads the files (`serve`: see loadConfig); notes (ignored kinds) go to stderr; problems go to stderr and exit 1. */
export async function loadOrExit(
  files: string[],
  problemsHeader: (n: number) => string,
  o: { serve?: boolean } = {},
): Promise<LoadedConfig> {
  const loaded = await loadConfig(files, o).catch((err: Error) => {
    process.stderr.write(`sluice: ${err.message}\n`);
    process.exit(1);
  });
  for (const n of loaded.notes) process.stderr.write(`sluice: note: ${n.where}: ${n.message}\n`);
  if (loaded.problems.length) {
    process.stderr.write(`${problemsHeader(loaded.problems.length)}\n${formatProblems(loaded.problems)}`);
    process.exit(1);
  }
  return loaded;
}

/**
 * Calls `onChange` once things settle (`debounceMs` after the last event) whenever one of the
 * files, or a *.yaml/*.yml file in one of the directories, is written, created, renamed or
 * removed. A file is watched through its directory, so an editor that saves by renaming a new
 * file over the old one is still seen. Returns a function that stops watching.
 */
export function watchConfig(
  paths: readonly string[],
  onChange: () => void,
  o: { debounceMs?: number; onError?: (err: Error) => void } = {},
): () => void {
  // Directory → which names in it matter (null: every *.yaml/*.yml).
  const wanted = new Map<string, Set<string> | null>();
  for (const p of paths) {
    if (statSync(p, { throwIfNoEntry: false })?.isDirectory()) wanted.set(p, null);
    else {
      const dir = dirname(p);
      const names = wanted.get(dir);
      if (names === null) continue;
      wanted.set(dir, (names ?? new Set()).add(basename(p)));
    }
  }
  let timer: NodeJS.Timeout | null = null;
  const changed = () => {
    if (timer) clearTimeout(timer);
    timer = setTimeout(() => {
      timer = null;
      onChange();
    }, o.debounceMs ?? 200);
  };
  const watchers: FSWatcher[] = [];
  for (const [dir, names] of wanted) {
    const w = watch(dir, (_event, name) => {
      const file = name === null ? null : String(name);
      if (file === null || (names === null ? isYamlFile(file) : names.has(file))) changed();
    });
    w.on('error', (err) => o.onError?.(err));
    watchers.push(w);
  }
  return () => {
    if (timer) clearTimeout(timer);
    for (const w of watchers) w.close();
  };
}
