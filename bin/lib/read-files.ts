/**
 * The -f FILE|DIR|- inputs of the commands that rewrite YAML text (migrate, convert): read as
 * text, a directory's *.yaml/*.yml files sorted, "-" standard input; and their outputs joined
 * into one stream of documents.
 */
import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { text as readStream } from 'node:stream/consumers';
import { isYamlFile, STDIN, STDIN_NAME } from '../../controller/source/file.ts';
import { failIn } from './command.ts';

/** The files named: a directory's *.yaml/*.yml (sorted, not recursive), "-" standard input. */
export async function readAll(
  command: string,
  paths: readonly string[],
): Promise<{ file: string; text: string }[]> {
  const out: { file: string; text: string }[] = [];
  for (const path of paths) {
    try {
      if (path === STDIN) out.push({ file: STDIN_NAME, text: await readStream(process.stdin) });
      else if ((await stat(path)).isDirectory()) {
        for (const name of (await readdir(path)).filter(isYamlFile).sort()) {
          const file = join(path, name);
          out.push({ file, text: await readFile(file, 'utf8') });
        }
      } else out.push({ file: path, text: await readFile(path, 'utf8') });
    } catch (err) {
      failIn(command, `${path} cannot be read (${(err as NodeJS.ErrnoException).code ?? String(err)})`, 1);
    }
  }
  return out;
}

/** Several files as one stream of documents: a "---" between them, each ending in a newline. */
export function joinDocuments(texts: string[]): string {
  return texts
    .filter((t) => t.trim() !== '')
    .map((t) => (t.endsWith('\n') ? t : `${t}\n`))
    .join('---\n');
}
