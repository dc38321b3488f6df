import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadFiles, parseFiles, parseYaml } from '../../controller/source/file.ts';

const route = (name: string, extra = '') => `apiVersion: sluice.dev/v1alpha1
kind: GatewayRoute
metadata:
  name: ${name}
${extra}spec:
  service: { name: ${name}, url: "http://${name}.apps" }
  routes: [{ name: r, paths: ["/${name}"] }]
`;

describe('parseYaml', () => {
  it('names the file and the line of a YAML syntax error, and loads the other documents', () => {
    const text = `${route('good')}---\napiVersion: sluice.dev/v1alpha1\nkind: GatewayRoute\nmetadata: { name: bad\n---\n${route('also-good')}`;
    const { objects, diagnostics } = parseYaml(text, 'conf/routes.yaml');
    expect(objects.map((o) => o.object.metadata.name)).toEqual(['good', 'also-good']);
    expect(diagnostics).toHaveLength(1);
    expect(diagnostics[0]).toMatchObject({ file: 'conf/routes.yaml', document: 1, reason: 'YAMLSyntax' });
    expect(diagnostics[0].line).toBeGreaterThanOrEqual(11);
    expect(diagnostics[0].message).toMatch(/^line \d+: /);
  });

  it('reports a duplicate key as a syntax error on its line', () => {
    const { diagnostics } = parseYaml('a: 1\nb: 2\na: 3\n', 'dup.yaml');
    expect(diagnostics).toMatchObject([{ file: 'dup.yaml', line: 3, reason: 'YAMLSyntax' }]);
  });

  it('reports unknown kinds and missing names with file, document index and line', () => {
    const text = `apiVersion: apps/v1\nkind: Deployment\nmetadata: { name: web }\n---\napiVersion: sluice.dev/v1alpha1\nkind: GatewayPlugin\nmetadata: {}\n---\n- a list\n`;
    const { objects, diagnostics } = parseYaml(text, 'x.yaml');
    expect(objects).toEqual([]);
    expect(diagnostics).toMatchObject([
      { file: 'x.yaml', document: 0, line: 1, reason: 'UnknownKind', field: 'kind' },
      { file: 'x.yaml', document: 1, line: 5, reason: 'MissingName', field: 'metadata.name' },
      { file: 'x.yaml', document: 2, line: 9, reason: 'NotAnObject' },
    ]);
    expect(diagnostics[1].message).toBe('line 5 (document 1): GatewayPlugin without metadata.name');
  });

  it('puts objects without a namespace in "default" and skips empty documents', () => {
    const { objects, diagnostics } = parseYaml(`---\n# only a comment\n---\n${route('a')}---\n`, 'f.yaml');
    expect(diagnostics).toEqual([]);
    expect(objects.map((o) => [o.object.metadata.namespace, o.document])).toEqual([['default', 1]]);
  });
});

describe('parseFiles', () => {
  it('merges files; a later duplicate replaces the earlier one and is reported', () => {
    const result = parseFiles([
      { file: 'a.yaml', text: route('same', '  generation: 1\n') },
      { file: 'b.yaml', text: `${route('other')}---\n${route('same', '  generation: 2\n')}` },
    ]);
    expect([...result.resources.routes.keys()]).toEqual(['default/other', 'default/same']);
    expect(result.resources.routes.get('default/same')?.metadata.generation).toBe(2);
    expect(result.diagnostics).toMatchObject([{ file: 'b.yaml', document: 1, reason: 'Duplicate' }]);
    expect(result.fileOf({ kind: 'GatewayRoute', name: 'same' })).toBe('b.yaml');
    expect(result.fileOf({ kind: 'GatewayRoute', namespace: 'default', name: 'nope' })).toBeUndefined();
  });
});

describe('loadFiles', () => {
  it('reads files, and reports an unreadable one instead of throwing', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sluice-file-'));
    const good = join(dir, 'good.yaml');
    writeFileSync(good, route('good'));
    const missing = join(dir, 'missing.yaml');
    const result = await loadFiles([good, missing]);
    expect([...result.resources.routes.keys()]).toEqual(['default/good']);
    expect(result.diagnostics).toMatchObject([{ file: missing, reason: 'FileUnreadable' }]);
    expect(result.diagnostics[0].message).toContain('ENOENT');
  });

  it('reads a directory for its *.yaml and *.yml files, in name order, and "-" from standard input', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sluice-dir-'));
    writeFileSync(join(dir, 'b.yml'), route('b'));
    writeFileSync(join(dir, 'a.yaml'), route('a'));
    writeFileSync(join(dir, 'README.md'), '# not config');
    const result = await loadFiles([dir, '-'], async () => route('piped'));
    expect(result.diagnostics).toEqual([]);
    expect([...result.resources.routes.keys()]).toEqual(['default/a', 'default/b', 'default/piped']);
    expect(result.fileOf({ kind: 'GatewayRoute', name: 'b' })).toBe(join(dir, 'b.yml'));
    expect(result.fileOf({ kind: 'GatewayRoute', name: 'piped' })).toBe('<stdin>');
  });
});

describe('kinds sluice does not own', () => {
  it('are skipped with an ignored diagnostic; misspelt kinds of ours and missing apiVersions are not', () => {
    const text = [
      'apiVersion: apps/v1\nkind: Deployment\nmetadata: { name: web }\n',
      'apiVersion: v1\nkind: ConfigMap\nmetadata: { name: cfg }\n',
      'apiVersion: sluice.dev/v1alpha1\nkind: GatewayRoutes\nmetadata: { name: typo }\n',
      'apiVersion: v1\nkind: GatewayRoute\nmetadata: { name: wrong-group }\n',
      'kind: GatewayPlugin\nmetadata: { name: no-api-version }\n',
    ].join('---\n');
    const { diagnostics } = parseYaml(text, 'x.yaml');
    expect(diagnostics.map((d) => [d.document, d.reason, d.ignored ?? false])).toEqual([
      [0, 'UnknownKind', true],
      [1, 'UnknownKind', true],
      [2, 'UnknownKind', false],
      [3, 'UnknownKind', false],
      [4, 'UnknownKind', false],
    ]);
    expect(diagnostics[0].message).toBe(
      'line 1 (document 0): apps/v1 Deployment web is not a kind sluice reads; ignored',
    );
  });
});

describe('parseYaml on hostile input', () => {
  it('reports an alias bomb or an unknown alias instead of throwing', () => {
    const bomb = ['a: &a [x, x, x, x, x, x, x, x, x, x]']
      .concat(
        Array.from(
          { length: 8 },
          (_, i) =>
            `${String.fromCharCode(98 + i)}: &${String.fromCharCode(98 + i)} [${Array(10)
              .fill(`*${String.fromCharCode(97 + i)}`)
              .join(', ')}]`,
        ),
      )
      .join('\n');
    expect(parseYaml(bomb, 'bomb.yaml').diagnostics).toMatchObject([
      { file: 'bomb.yaml', reason: 'YAMLSyntax' },
    ]);
    expect(parseYaml('a: *nowhere\n', 'alias.yaml').diagnostics).toMatchObject([
      { file: 'alias.yaml', reason: 'YAMLSyntax' },
    ]);
  });
});
