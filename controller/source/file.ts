/**
 * Standalone mode's source: multi-document YAML files holding the same GatewayRoute,
 * GatewayPlugin and Secret objects a user would `kubectl apply`. parseFiles is pure (text in,
 * objects and diagnostics out); loadFiles only adds the reading (files, directories, standard
 * input). A broken document is reported with its file and line and skipped; the other
 * documents still load. Objects of kinds Sluice does not own (a Deployment in the same file)
 * are skipped with a diagnostic marked `ignored`: a note, not a problem. A file that holds
 * nothing at all (empty, or only comments and ---) is a problem: what a half-written save looks
 * like. Bounds (dataplane/config/limits.ts): a file over CONFIG_MAX_BYTES is not read, one nested
 * deeper than CONFIG_MAX_DEPTH is refused at the line where it goes too deep.
 */
import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { text as readStream } from 'node:stream/consumers';
import { Composer, type Document, Lexer, LineCounter, Parser, type CST } from 'yaml';
import { CONFIG_MAX_BYTES, CONFIG_MAX_DEPTH, YAML_MAX_ALIAS_COUNT } from '../../dataplane/config/limits.ts';
import { configField } from '../api/gateway-plugin.ts';
import type { Resource } from '../api/index.ts';
import {
  DEFAULT_NAMESPACE,
  type ObjectRef,
  type ResourceSet,
  refKey,
  refOf,
  resourceSetFrom,
} from './resource-set.ts';

export type LoadReason =
  | 'FileUnreadable'
  | 'NoFiles'
  | 'TooLarge'
  | 'Empty'
  | 'YAMLSyntax'
  | 'TooDeep'
  | 'NotAnObject'
  | 'UnknownKind'
  | 'MissingName'
  | 'InvalidMetadata'
  | 'Duplicate'
  | 'Deprecated';

/** A problem reading a file. The message does not repeat the file (callers print it) but says the line. */
export interface LoadDiagnostic {
  file: string;
  /** Index of the document in the file, from 0 (empty documents count). */
  document?: number;
  /** 1-based line of the error, or of the document's start. */
  line?: number;
  object?: ObjectRef;
  field?: string;
  reason: LoadReason;
  message: string;
  /**
   * A note, not an error: an object of a kind Sluice does not own (apps/v1 Deployment…), skipped;
   * or a deprecated form that still loads (a GatewayPlugin's untyped spec.config).
   */
  ignored?: true;
}

export interface FileText {
  file: string;
  text: string;
}

export interface LoadResult {
  resources: ResourceSet;
  diagnostics: LoadDiagnostic[];
  /** The file an object came from, to point a build diagnostic at it (namespace defaults to "default"). */
  fileOf(ref: { kind: string; namespace?: string; name: string }): string | undefined;
}

/** One object found in a file, and where. */
export interface LocatedObject {
  object: Resource;
  file: string;
  document: number;
  line: number;
}

const KNOWN = new Set(['sluice.dev/v1alpha1 GatewayRoute', 'sluice.dev/v1alpha1 GatewayPlugin', 'v1 Secret']);

/** Parses one file's text into objects of known kinds; everything else becomes a diagnostic. */
export function parseYaml(
  text: string,
  file: string,
): { objects: LocatedObject[]; diagnostics: LoadDiagnostic[] } {
  const objects: LocatedObject[] = [];
  const diagnostics: LoadDiagnostic[] = [];
  const lines = new LineCounter();
  const docs = parseBounded(text, lines);
  if ('tooDeep' in docs) {
    const { line, document } = docs.tooDeep;
    const message = `line ${line}: nests deeper than ${CONFIG_MAX_DEPTH} levels of mappings and sequences; the file is not read`;
    return { objects, diagnostics: [{ file, document, line, reason: 'TooDeep', message }] };
  }
  let empty = true;
  docs.forEach((doc, document) => {
    // The line of the document's first content (its "---" marker, if any, comes before).
    const line = lines.linePos(doc.contents?.range?.[0] ?? doc.range[0]).line;
    const at = { file, document };
    let value: unknown;
    try {
      if (doc.errors.length) throw doc.errors[0];
      value = doc.toJS({ maxAliasCount: YAML_MAX_ALIAS_COUNT }); // throws too, e.g. on an alias bomb or an undefined alias
    } catch (err) {
      const pos = (err as { pos?: [number, number] }).pos;
      const errLine = pos ? lines.linePos(pos[0]).line : line;
      const message = `line ${errLine}: ${(err as Error).message}`;
      diagnostics.push({ ...at, line: errLine, reason: 'YAMLSyntax', message });
      return;
    }
    if (value === null || value === undefined) return; // an empty document, e.g. after a trailing "---"
    empty = false;
    const checked = checkObject(value);
    if ('problem' in checked) {
      const { reason, field, message, ignored } = checked.problem;
      diagnostics.push({
        ...at,
        line,
        reason,
        field,
        message: `line ${line} (document ${document}): ${message}`,
        ...(ignored && { ignored }),
      });
      return;
    }
    objects.push({ object: checked.object, ...at, line });
    const deprecated = deprecation(checked.object);
    if (deprecated)
      diagnostics.push({
        ...at,
        line,
        object: refOf(checked.object),
        field: deprecated.field,
        reason: 'Deprecated',
        message: `line ${line} (document ${document}): ${deprecated.message}`,
        ignored: true,
      });
  });
  if (empty && !diagnostics.length)
    diagnostics.push({
      file,
      line: 1,
      reason: 'Empty',
      message: 'holds no routes: the file is empty (or only comments and ---); an empty file is refused',
    });
  return { objects, diagnostics };
}

const COLLECTIONS = new Set<CST.Token['type']>(['block-map', 'block-seq', 'flow-collection']);

/**
 * parseAllDocuments with the nesting bounded. yaml's composer and toJS recurse once per level
 * (a document 10,000 levels deep ended in "Maximum call stack size exceeded") and the library
 * has no depth option; its CST parser does not recurse, so its stack of open nodes is watched
 * as it reads (the lexer-driven use its docs show) and the parse stops at the first level over
 * CONFIG_MAX_DEPTH: the line, and the index of the document, where that happens.
 */
function parseBounded(
  text: string,
  lines: LineCounter,
): Document.Parsed[] | { tooDeep: { line: number; document: number } } {
  const parser = new Parser(lines.addNewLine);
  lines.addNewLine(0); // as Parser.parse() does before the first line
  const tokens: CST.Token[] = [];
  const tooDeep = () => parser.stack.filter((t) => COLLECTIONS.has(t.type)).length > CONFIG_MAX_DEPTH;
  for (const lexeme of new Lexer().lex(text)) {
    for (const token of parser.next(lexeme)) tokens.push(token);
    // The stack holds the document and, per level, one collection (and a scalar being read).
    if (parser.stack.length > CONFIG_MAX_DEPTH && tooDeep()) {
      const document = tokens.filter((t) => t.type === 'document').length;
      return { tooDeep: { line: lines.linePos(parser.offset).line, document } };
    }
  }
  for (const token of parser.end()) tokens.push(token);
  return [...new Composer({ lineCounter: lines, prettyErrors: false }).compose(tokens)];
}

type Problem = { reason: LoadReason; field?: string; message: string; ignored?: true };

/** A form that still loads but will not forever: the untyped spec.config of a GatewayPlugin. */
function deprecation(o: Resource): { field: string; message: string } | null {
  if (o.kind !== 'GatewayPlugin' || (o.spec as { config?: unknown } | undefined)?.config === undefined)
    return null;
  return {
    field: 'spec.config',
    message: `spec.config is deprecated; \`sluice migrate -f FILE\` moves it to spec.${configField(String(o.spec.plugin))}`,
  };
}

const OWN_KINDS = new Set(['GatewayRoute', 'GatewayPlugin']);

/** A kind of someone else's (apps/v1 Deployment, v1 ConfigMap): not sluice.dev, and not named like ours. */
function foreign(v: Record<string, unknown>): boolean {
  const { apiVersion, kind } = v;
  return (
    typeof apiVersion === 'string' &&
    typeof kind === 'string' &&
    kind !== '' &&
    !apiVersion.startsWith('sluice.dev/') &&
    !OWN_KINDS.has(kind)
  );
}

/** The object with its namespace filled in, or why it cannot be read. */
function checkObject(value: unknown): { object: Resource } | { problem: Problem } {
  const problem = (reason: LoadReason, field: string | undefined, message: string) => ({
    problem: { reason, field, message },
  });
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    return problem('NotAnObject', undefined, 'not a Kubernetes object (a YAML mapping)');
  const v = value as Record<string, unknown>;
  const type = `${String(v.apiVersion)} ${String(v.kind)}`;
  if (!KNOWN.has(type) && foreign(v)) {
    const name = (v.metadata as { name?: unknown } | undefined)?.name;
    const named = typeof name === 'string' ? ` ${name}` : '';
    return {
      problem: {
        reason: 'UnknownKind',
        field: 'kind',
        message: `${type}${named} is not a kind sluice reads; ignored`,
        ignored: true,
      },
    };
  }
  if (!KNOWN.has(type))
    return problem(
      'UnknownKind',
      'kind',
      `unknown apiVersion/kind "${type}", ignored (known: ${[...KNOWN].join(', ')})`,
    );
  const meta = v.metadata as Record<string, unknown> | undefined;
  if (typeof meta !== 'object' || meta === null || typeof meta.name !== 'string' || meta.name === '')
    return problem('MissingName', 'metadata.name', `${String(v.kind)} without metadata.name`);
  if (meta.namespace !== undefined && typeof meta.namespace !== 'string')
    return problem('InvalidMetadata', 'metadata.namespace', 'metadata.namespace must be a string');
  const metadata = { ...meta, namespace: meta.namespace ?? DEFAULT_NAMESPACE };
  return { object: { ...v, metadata } as unknown as Resource };
}

/** Parses several files into one ResourceSet; a later object with the same identity replaces an earlier one. */
export function parseFiles(files: readonly FileText[]): LoadResult {
  const diagnostics: LoadDiagnostic[] = [];
  const seen = new Map<string, LocatedObject>();
  for (const { file, text } of files) {
    const parsed = parseYaml(text, file);
    diagnostics.push(...parsed.diagnostics);
    for (const found of parsed.objects) {
      const ref = refOf(found.object);
      const earlier = seen.get(refKey(ref));
      if (earlier) {
        const where = `${earlier.file}:${earlier.line}`;
        diagnostics.push({
          file,
          document: found.document,
          line: found.line,
          object: ref,
          field: 'metadata.name',
          reason: 'Duplicate',
          message: `line ${found.line}: ${ref.kind} ${ref.namespace}/${ref.name} also appears at ${where}; the later one is used`,
        });
      }
      seen.set(refKey(ref), found);
    }
  }
  return {
    resources: resourceSetFrom([...seen.values()].map((l) => l.object)),
    diagnostics,
    fileOf: (ref) => seen.get(`${ref.kind}/${ref.namespace ?? DEFAULT_NAMESPACE}/${ref.name}`)?.file,
  };
}

/** The path that means standard input, and the name its diagnostics give it. */
export const STDIN = '-';
export const STDIN_NAME = '<stdin>';

/** Whether a directory entry is a config file: *.yaml or *.yml. */
export const isYamlFile = (name: string) => /\.ya?ml$/.test(name);

/**
 * Reads the paths (the only I/O here) and parses them: a file; a directory, for its *.yaml and
 * *.yml files (sorted, not recursive); "-", standard input. An unreadable path is a
 * diagnostic, not a throw.
 */
export async function loadFiles(
  paths: readonly string[],
  readStdin: () => Promise<string> = () => readStream(process.stdin),
): Promise<LoadResult> {
  const files: FileText[] = [];
  const unreadable: LoadDiagnostic[] = [];
  // A file over the bound is not read at all (its size is known first); standard input is read, then weighed.
  const read = async (file: string) => {
    const { size } = await stat(file);
    if (size > CONFIG_MAX_BYTES) unreadable.push(tooLarge(file, size));
    else files.push({ file, text: await readFile(file, 'utf8') });
  };
  for (const path of paths) {
    try {
      if (path === STDIN) {
        const text = await readStdin();
        const size = Buffer.byteLength(text);
        if (size > CONFIG_MAX_BYTES) unreadable.push(tooLarge(STDIN_NAME, size));
        else files.push({ file: STDIN_NAME, text });
      } else if ((await stat(path)).isDirectory()) {
        const names = (await readdir(path)).filter(isYamlFile).sort();
        if (names.length === 0)
          unreadable.push({
            file: path,
            reason: 'NoFiles',
            message: 'a directory without *.yaml or *.yml files',
          });
        for (const name of names) await read(join(path, name));
      } else await read(path);
    } catch (err) {
      const message = `cannot be read (${(err as NodeJS.ErrnoException).code ?? String(err)})`;
      unreadable.push({ file: path, reason: 'FileUnreadable', message });
    }
  }
  const result = parseFiles(files);
  return { ...result, diagnostics: [...unreadable, ...result.diagnostics] };
}

function tooLarge(file: string, bytes: number): LoadDiagnostic {
  const mib = (n: number) => `${(n / 2 ** 20).toFixed(1)} MiB`;
  const message = `is ${mib(bytes)}, over the ${mib(CONFIG_MAX_BYTES)} a config file may hold; not read`;
  return { file, reason: 'TooLarge', message };
}
