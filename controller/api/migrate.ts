/**
 * The one conversion `sluice migrate` makes: a GatewayPlugin written with the deprecated untyped
 * `spec.config` gets the same map under the field named after its plugin (`plugin: rate-limiting`,
 * `config:` → `rateLimiting:`). Pure, text in and text out: only the key's text changes, so
 * comments, order, quoting and the rest of the file stay byte for byte (a `kind: List`, as
 * `kubectl get -o yaml` prints, is looked into; JSON is YAML too).
 */
import { isMap, isScalar, isSeq, LineCounter, type Node, parseAllDocuments, type YAMLMap } from 'yaml';
import { PLUGIN_NAMES } from '../../dataplane/config/catalog.ts';
import { configField } from './gateway-plugin.ts';

export interface MigrateResult {
  text: string;
  /** "namespace/name" (or "name") of each GatewayPlugin rewritten, in file order. */
  migrated: string[];
  /** What could not be rewritten, each with its line; those objects are left as they were. */
  problems: { line: number; message: string }[];
}

export function migratePlugins(text: string): MigrateResult {
  const lines = new LineCounter();
  const docs = parseAllDocuments(text, { lineCounter: lines });
  const edits: { from: number; to: number; text: string }[] = [];
  const migrated: string[] = [];
  const problems: MigrateResult['problems'] = [];
  const lineOf = (node: Node | null | undefined) => lines.linePos(node?.range?.[0] ?? 0).line;

  const visit = (obj: YAMLMap) => {
    const kind = obj.get('kind');
    const items = obj.get('items', true);
    if (typeof kind === 'string' && kind.endsWith('List') && isSeq(items)) {
      for (const item of items.items) if (isMap(item)) visit(item);
      return;
    }
    if (kind !== 'GatewayPlugin' || obj.get('apiVersion') !== 'sluice.dev/v1alpha1') return;
    const spec = obj.get('spec', true);
    if (!isMap(spec)) return;
    const pair = spec.items.find((p) => isScalar(p.key) && p.key.value === 'config');
    if (!pair) return;
    const meta = obj.get('metadata', true);
    const name = isMap(meta) ? [meta.get('namespace'), meta.get('name')].filter(Boolean).join('/') : '';
    const key = pair.key as Node;
    const plugin = spec.get('plugin');
    const say = (message: string) =>
      problems.push({ line: lineOf(key), message: `GatewayPlugin ${name}: ${message}` });
    if (typeof plugin !== 'string' || !(PLUGIN_NAMES as string[]).includes(plugin))
      return say(`spec.plugin ${JSON.stringify(plugin)} is not a plugin sluice has; left as is`);
    const field = configField(plugin);
    if (spec.has(field)) return say(`has both spec.config and spec.${field}; left as is (keep one)`);
    const [from, to] = key.range!;
    const quote = /^["']/.exec(text.slice(from, to))?.[0] ?? '';
    edits.push({ from, to, text: `${quote}${field}${quote}` });
    migrated.push(name);
  };

  for (const doc of docs) {
    if (doc.errors.length) {
      problems.push({ line: lines.linePos(doc.errors[0].pos[0]).line, message: doc.errors[0].message });
      continue;
    }
    if (isMap(doc.contents)) visit(doc.contents);
  }
  let out = text;
  for (const e of edits.sort((a, b) => b.from - a.from))
    out = out.slice(0, e.from) + e.text + out.slice(e.to);
  return { text: out, migrated, problems };
}
