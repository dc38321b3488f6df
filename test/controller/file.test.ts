import { mkdtempSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadFiles, parseFiles, parseYaml } from '../../controller/source/file.ts';
import { CONFIG_MAX_BYTES, CONFIG_MAX_DEPTH } from '../../dataplane/config/limits.ts';

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

  it('refuses a file nested deeper than the bound at the line where it goes too deep, without a stack overflow', () => {
    const tooDeep = (line: number, document = 0) => [
      {
        file: 'deep.yaml',
        document,
        line,
        reason: 'TooDeep',
        message: `line ${line}: nests deeper than ${CONFIG_MAX_DEPTH} levels of mappings and sequences; the file is not read`,
      },
    ];
    // 10,000 levels: JSON (flow style) on one line and one per line; block sequences on one line.
    const n = 10_000;
    const oneLine = `${'['.repeat(n)}${']'.repeat(n)}`;
    expect(parseYaml(oneLine, 'deep.yaml')).toEqual({ objects: [], diagnostics: tooDeep(1) });
    const perLine = `${'{"a":\n'.repeat(n)}1${'}'.repeat(n)}`;
    expect(parseYaml(perLine, 'deep.yaml').diagnostics).toEqual(tooDeep(CONFIG_MAX_DEPTH + 1));
    expect(parseYaml(`${'- '.repeat(n)}x\n`, 'deep.yaml').diagnostics).toEqual(tooDeep(1));
    // In a later document, after a good one: that document's index and line; nothing of the file loads.
    const later = parseYaml(`${route('ok')}---\nspec: ${'['.repeat(n)}\n`, 'deep.yaml');
    expect(later).toEqual({ objects: [], diagnostics: tooDeep(9, 1) }); // the route's 7 lines, ---, then spec
  });

  it('reads a block mapping exactly CONFIG_MAX_DEPTH deep, and refuses one level more on its line', () => {
    const nested = (levels: number) =>
      `${Array.from({ length: levels }, (_, i) => `${'  '.repeat(i)}k${i}:`).join('\n')} 1\n`;
    const atBound = parseYaml(nested(CONFIG_MAX_DEPTH), 'deep.yaml').diagnostics;
    expect(atBound.map((d) => d.reason)).toEqual(['UnknownKind']); // read: only not one of our objects
    expect(parseYaml(nested(CONFIG_MAX_DEPTH + 1), 'deep.yaml').diagnostics).toMatchObject([
      { reason: 'TooDeep', line: CONFIG_MAX_DEPTH + 1 },
    ]);
  });

  it('refuses a file that holds nothing: empty, blank, only comments, only document markers', () => {
    for (const text of ['', '\n\n  \n', '# routes go here\n', '---\n', '---\n# nothing\n---\n...\n']) {
      expect(parseYaml(text, 'empty.yaml'), JSON.stringify(text)).toEqual({
        objects: [],
        diagnostics: [
          {
            file: 'empty.yaml',
            line: 1,
            reason: 'Empty',
            message:
              'holds no routes: the file is empty (or only comments and ---); an empty file is refused',
          },
        ],
      });
    }
    // A file with an object of any kind is not empty, and a broken one has its own problem.
    expect(
      parseYaml('apiVersion: v1\nkind: ConfigMap\nmetadata: { name: c }\n', 'c.yaml').diagnostics,
    ).toMatchObject([{ reason: 'UnknownKind', ignored: true }]);
    expect(parseYaml('a: [\n', 'broken.yaml').diagnostics).toMatchObject([{ reason: 'YAMLSyntax' }]);
  });

  it('does not read a file over CONFIG_MAX_BYTES, nor take standard input over it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sluice-big-'));
    const big = join(dir, 'big.yaml');
    writeFileSync(big, route('big'));
    truncateSync(big, CONFIG_MAX_BYTES + 1); // the route, then zero bytes: too large before it is parsed
    const atBound = join(dir, 'at-bound.yaml');
    writeFileSync(
      atBound,
      `${route('at-bound')}#${' '.repeat(CONFIG_MAX_BYTES - route('at-bound').length - 2)}\n`,
    );
    const result = await loadFiles(
      [big, atBound, '-'],
      async () => `${route('piped')}#${'x'.repeat(CONFIG_MAX_BYTES)}`,
    );
    expect([...result.resources.routes.keys()]).toEqual(['default/at-bound']);
    expect(result.diagnostics).toEqual([
      {
        file: big,
        reason: 'TooLarge',
        message: 'is 32.0 MiB, over the 32.0 MiB a config file may hold; not read',
      },
      {
        file: '<stdin>',
        reason: 'TooLarge',
        message: 'is 32.0 MiB, over the 32.0 MiB a config file may hold; not read',
      },
    ]);
  });
});
