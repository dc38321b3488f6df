/**
 * The core names no plugin (ARCHITECTURE §2): a plugin declares its per-request state (slots),
 * metrics, stores and capabilities in its own folder and manifest, so nothing in
 * dataplane/{pipeline,observability,runtime,cluster,server}/ refers to one. Checked on the
 * syntax tree (TypeScript's parser), from the names of the catalog's manifests:
 *   - an identifier whose words contain a plugin's words (`idempotencyOutcome`, `#rateLimit`,
 *     `RATE_LIMIT_METRICS`, `proxyCache`); `-ing` names also by their stem (rate-limit);
 *   - a string holding a plugin's name as a whole token (`p.name === 'idempotency'`, an import of
 *     `../plugins/idempotency/…`), where a header name that begins with it (`idempotency-key`) is
 *     not one.
 * Comments are not read. runtime/registry.ts is the one file that maps a name to its code.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { PLUGIN_MANIFESTS } from '../../dataplane/config/catalog.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const CORE = ['pipeline', 'observability', 'runtime', 'cluster', 'server'];
/** The registry maps a manifest's name to its implementation: naming plugins is its job. */
const EXEMPT = new Set(['dataplane/runtime/registry.ts']);

/** An identifier's words, lower-case: idempotencyOutcome, IDEMPOTENCY_OUTCOME, #idempotency → idempotency, outcome. */
const wordsOf = (identifier: string): string[] =>
  (identifier.match(/[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])/g) ?? []).map((w) => w.toLowerCase());

/** A plugin's name as identifier words: rate-limiting → [rate, limiting] and [rate, limit]. */
function wordForms(name: string): string[][] {
  const words = name.split('-');
  const last = words[words.length - 1];
  return last.endsWith('ing') && last.length > 5
    ? [words, [...words.slice(0, -1), last.slice(0, -3)]]
    : [words];
}

const containsRun = (words: string[], run: string[]): boolean =>
  words.some((_, i) => run.every((r, j) => words[i + j] === r));

/** The plugin names `text` (a TypeScript file) refers to, with where. */
function pluginReferences(text: string, names: readonly string[]): string[] {
  const source = ts.createSourceFile('f.ts', text, ts.ScriptTarget.Latest, true);
  const forms = names.map((n) => ({ name: n, words: wordForms(n) }));
  const tokens = names.map((n) => ({ name: n, re: new RegExp(`(?<![\\w-])${n}(?![\\w-])`) }));
  const found: string[] = [];
  const at = (node: ts.Node) => source.getLineAndCharacterOfPosition(node.getStart()).line + 1;
  const visit = (node: ts.Node): void => {
    if (ts.isIdentifier(node) || ts.isPrivateIdentifier(node)) {
      const words = wordsOf(node.text);
      for (const f of forms)
        if (f.words.some((w) => containsRun(words, w)))
          found.push(`line ${at(node)}: identifier ${node.text} names ${f.name}`);
    } else if (ts.isStringLiteralLike(node) || ts.isTemplateLiteralToken(node)) {
      for (const t of tokens)
        if (t.re.test(node.text)) found.push(`line ${at(node)}: string '${node.text}' names ${t.name}`);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

function coreFiles(): string[] {
  return CORE.flatMap((dir) =>
    readdirSync(join(ROOT, 'dataplane', dir), { recursive: true, withFileTypes: true })
      .filter((d) => d.isFile() && d.name.endsWith('.ts'))
      .map((d) => relative(ROOT, join(d.parentPath, d.name))),
  ).filter((f) => !EXEMPT.has(f));
}

const NAMES = PLUGIN_MANIFESTS.map((m) => m.name);

describe('the core names no plugin', () => {
  it('reads the catalog and the core (sanity)', () => {
    expect(NAMES).toEqual(expect.arrayContaining(['idempotency', 'rate-limiting', 'proxy-cache', 'jwt']));
    expect(coreFiles().length).toBeGreaterThan(30);
  });

  it('in dataplane/{pipeline,observability,runtime,cluster,server}/ (comments and header names aside)', () => {
    const offences = coreFiles().flatMap((f) =>
      pluginReferences(readFileSync(join(ROOT, f), 'utf8'), NAMES).map((o) => `${f}: ${o}`),
    );
    expect(offences).toEqual([]);
  });
});

describe('the checker itself', () => {
  it.each([
    ['ctx.idempotencyOutcome = null;', 'identifier idempotencyOutcome'],
    ['class M { #rateLimit = 1; }', 'identifier #rateLimit'],
    ['const RATE_LIMITING_STORE = 1;', 'identifier RATE_LIMITING_STORE'],
    ['type T = ProxyCacheOutcome;', 'identifier ProxyCacheOutcome'],
    ["if (p.name === 'idempotency') {}", "string 'idempotency'"],
    ["import x from '../plugins/key-auth/index.ts';", "string '../plugins/key-auth/index.ts'"],
    // A template's text after a placeholder: `${a} mtls-auth`.
    ['const m = `$' + '{a} mtls-auth`;', "string ' mtls-auth'"],
  ])('finds %s', (text, what) => {
    expect(pluginReferences(text, NAMES).join('\n')).toContain(what);
  });

  it.each([
    ['// the idempotency plugin sets ctx.idempotencyOutcome'],
    ['/** rate-limiting counts it */ const x = 1;'],
    ["const redact = ['req.headers[\"idempotency-key\"]', 'Idempotency-Key'];"],
    ["if (step.phase === 'cors-preflight') preflight = true;"],
    ['const cache = new Map(); const keyAuthority = 1; const jwtish = 2;'],
  ])('passes %s', (text) => {
    expect(pluginReferences(text, NAMES)).toEqual([]);
  });
});
