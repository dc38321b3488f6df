/**
 * The sluice command's surface, through the real binary: one flag table per command (an
 * unknown flag is refused naming flag and command, exit 2), --help per command, --version,
 * and `sluice validate` reading standard input, directories, files with kinds it does not own,
 * and printing the compiled snapshot with -o json|yaml; empty, too deep and over-size files
 * refused by validate and run.
 */
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';

const SLUICE = ['--disable-warning=ExperimentalWarning', 'bin/sluice.ts'];
const VERSION = (JSON.parse(await readFile('package.json', 'utf8')) as { version: string }).version;
const COMMANDS = ['run', 'validate', 'dataplane', 'controller', 'migrate', 'convert', 'crds'];

interface Result {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs sluice with `args`, writing `stdin` (if any) to its standard input. */
function sluice(args: string[], stdin?: string): Promise<Result> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...SLUICE, ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      stdout += d;
    });
    child.stderr.setEncoding('utf8').on('data', (d: string) => {
      stderr += d;
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(stdin ?? '');
  });
}

const route = (name: string, path: string) =>
  `apiVersion: sluice.dev/v1alpha1\nkind: GatewayRoute\nmetadata: { name: ${name}, namespace: default }\nspec:\n  service: { name: ${name}, url: "http://127.0.0.1:9" }\n  routes:\n    - name: r\n      paths: ["${path}"]\n`;
const deployment =
  'apiVersion: apps/v1\nkind: Deployment\nmetadata: { name: web }\nspec: { replicas: 1, selector: { matchLabels: { app: web } } }\n';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sluice-commands-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('flags', () => {
  it('refuses a flag of another command, naming the flag and the command (exit 2)', async () => {
    const r = await sluice(['run', '-f', 'examples/gateway.yaml', '--lease-name', 'x']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('sluice run: unknown flag --lease-name');
    const c = await sluice(['controller', '--dataplane-service', 'a/b', '--state-dir', '/tmp']);
    expect(c.code).toBe(2);
    expect(c.stderr).toContain('sluice controller: unknown flag --state-dir');
    const v = await sluice(['validate', '-f', 'examples/gateway.yaml', '--port=80']);
    expect(v.code).toBe(2);
    expect(v.stderr).toContain('sluice validate: unknown flag --port');
  });

  it('refuses stray arguments, missing values, unknown commands and flags before the command (exit 2)', async () => {
    for (const [args, said] of [
      [['validate', '-f', 'examples/gateway.yaml', 'extra'], 'unexpected argument "extra"'],
      [['run', '--port'], "'--port <value>' argument missing"],
      [['nope'], 'unknown command "nope"'],
      [['--port', '80', 'run'], '--port goes after a command'],
      [['dataplane', '--state-dir', dir, '--port', 'eighty'], '--port must be a whole number'],
      [
        [
          'controller',
          '--dataplane-service',
          'a/b',
          '--admin-token',
          't',
          '--watch-namespaces',
          'shop,Bad_NS',
        ],
        '--watch-namespaces: Bad_NS is not a namespace name',
      ],
      [
        [
          'controller',
          '--dataplane-service',
          'a/b',
          '--admin-token',
          't',
          '--gateway-service-type',
          'External',
        ],
        '--gateway-service-type must be ClusterIP, LoadBalancer, NodePort, not "External"',
      ],
      [
        [
          'controller',
          '--dataplane-service',
          'a/b',
          '--admin-token',
          't',
          '--gateway-controller-name',
          'team-b',
        ],
        '--gateway-controller-name: "team-b" is not a domain-prefixed path (example.com/name)',
      ],
      [
        [
          'controller',
          '--dataplane-service',
          'a/b',
          '--admin-token',
          't',
          '--gateway-service-selector',
          'app=sluice,no value',
        ],
        '--gateway-service-selector: "no value" is not KEY=VALUE with a label key and value',
      ],
      [
        ['controller', '--dataplane-service', 'a/b', '--admin-token', 't', '--ingress', 'yes'],
        '--ingress must be on or off',
      ],
      [
        ['controller', '--dataplane-service', 'a/b', '--admin-token', 't', '--ingress-class', 'Sluice_Class'],
        '--ingress-class: "Sluice_Class" is not an IngressClass name',
      ],
      [
        ['controller', '--dataplane-service', 'a/b', '--admin-token', 't', '--publish-service', 'proxy'],
        '--publish-service must be NAMESPACE/NAME',
      ],
    ] as const) {
      const r = await sluice([...args]);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr).toContain(said);
    }
  });

  it('--version and <command> --version print the package.json version', async () => {
    // One process per command, started together: each is independent, and this machine has few cores.
    const args = [['--version'], ...COMMANDS.map((c) => [c, '--version'])];
    for (const r of await Promise.all(args.map((a) => sluice(a)))) {
      expect(r.code).toBe(0);
      expect(r.stdout).toBe(`${VERSION}\n`);
    }
  });
});

describe('help', () => {
  it('each command has its own --help: its flags only, with examples', async () => {
    const own: Record<string, [string[], string[]]> = {
      run: [
        ['--file', '--watch', '--state-dir', '--redis'],
        ['--lease-name', '--output'],
      ],
      validate: [
        ['--file', '--output', 'FILE|DIR|-'],
        ['--port', '--watch', '--lease-name'],
      ],
      dataplane: [
        ['--state-dir', '--admin-token-file', '--redis'],
        ['--file', '--lease-name'],
      ],
      controller: [
        ['--dataplane-service', '--lease-name', '--admin-ca-file'],
        ['--port ', '--state-dir'],
      ],
      migrate: [
        ['--file', '--write', 'FILE|DIR|-'],
        ['--output', '--watch', '--state-dir'],
      ],
      convert: [
        ['--file', '--to', '--gateway', 'FILE|DIR|-'],
        ['--write', '--output', '--state-dir'],
      ],
      crds: [['kubectl apply --server-side --force-conflicts -f -'], ['--file', '--state-dir']],
    };
    const texts: Record<string, string> = {};
    const helps = await Promise.all(COMMANDS.map((cmd) => sluice([cmd, '--help'])));
    for (const [i, cmd] of COMMANDS.entries()) {
      const r = helps[i];
      expect(r.code, `${cmd} --help`).toBe(0);
      texts[cmd] = r.stdout;
      expect(r.stdout).toMatch(new RegExp(`^sluice ${cmd} — `));
      expect(r.stdout).toContain(`Usage:\n  sluice ${cmd} `);
      expect(r.stdout).toMatch(new RegExp(`Examples:\\n  sluice ${cmd} `));
      expect(r.stdout).toContain('--help');
      const [has, hasNot] = own[cmd];
      for (const flag of has) expect(r.stdout, `${cmd} --help shows ${flag}`).toContain(flag);
      for (const flag of hasNot) expect(r.stdout, `${cmd} --help hides ${flag}`).not.toContain(flag);
    }
    expect((await sluice(['run', '-h'])).stdout).toBe(texts.run);
    expect((await sluice(['help', 'validate'])).stdout).toBe(texts.validate);
  });

  it('sluice with no command prints the overview on stderr (a usage error) and exits 2; --help on stdout, 0', async () => {
    const r = await sluice([]);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    for (const cmd of COMMANDS) expect(r.stderr).toContain(`sluice ${cmd} `);
    expect(r.stderr).toContain('sluice <command> --help');
    const help = await sluice(['--help']);
    expect(help.code).toBe(0);
    expect(help.stderr).toBe('');
    expect(help.stdout).toBe(r.stderr);
  });
});

describe('sluice crds', () => {
  it("prints the CRDs of crds/ (the chart's crds/ hold the same), one YAML document each, exit 0", async () => {
    const r = await sluice(['crds']);
    expect(r.code).toBe(0);
    expect(r.stderr).toBe('');
    const files = ['sluice.dev_gatewayroutes.yaml', 'sluice.dev_gatewayplugins.yaml'];
    for (const dir of ['crds', 'charts/sluice/crds']) {
      const texts = await Promise.all(files.map((f) => readFile(join(dir, f), 'utf8')));
      expect(r.stdout, dir).toBe(texts.join('---\n'));
    }
    const docs = parseAllDocuments(r.stdout).map(
      (d) => d.toJS() as { kind: string; metadata: { name: string } },
    );
    expect(docs.map((d) => `${d.kind}/${d.metadata.name}`)).toEqual([
      'CustomResourceDefinition/gatewayroutes.sluice.dev',
      'CustomResourceDefinition/gatewayplugins.sluice.dev',
    ]);
  });
});

describe('sluice crds, read in part', () => {
  it('a reader that stops early (| head -1) is no error', async () => {
    const r = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      const child = spawn('sh', ['-c', `${process.execPath} ${SLUICE.join(' ')} crds | head -1`], {
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      child.stdout.setEncoding('utf8').on('data', (d: string) => {
        stdout += d;
      });
      child.stderr.setEncoding('utf8').on('data', (d: string) => {
        stderr += d;
      });
      child.on('close', (code) => resolve({ code, stdout, stderr }));
    });
    expect(r.stdout).toBe(
      '# Generated by `make crds` (scripts/gen-crds.ts) from controller/api. Do not edit.\n',
    );
    expect(r.stderr).toBe('');
  });
});

describe('sluice validate', () => {
  it('reads standard input with -f -', async () => {
    const r = await sluice(['validate', '-f', '-'], route('a', '/a'));
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^ok: 1 routes, hash [0-9a-f]{64}\n$/);
    const bad = await sluice(
      ['validate', '-f', '-'],
      route('b', 'no-slash').replace('http://127.0.0.1:9', 'x'),
    );
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('<stdin>: GatewayRoute default/b');
  });

  it('reads every *.yaml and *.yml of a directory, and nothing else', async () => {
    const conf = join(dir, 'conf');
    await mkdir(conf);
    await writeFile(join(conf, 'a.yaml'), route('a', '/a'));
    await writeFile(join(conf, 'b.yml'), route('b', '/b'));
    await writeFile(join(conf, 'notes.txt'), 'not yaml: [');
    const r = await sluice(['validate', '-f', conf]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^ok: 2 routes, /);
    await writeFile(join(conf, 'c.yaml'), route('c', '/c').replace('http://127.0.0.1:9', 'ftp://x'));
    const bad = await sluice(['validate', '-f', conf]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain(`${join(conf, 'c.yaml')}: GatewayRoute default/c`);
    const empty = join(dir, 'empty');
    await mkdir(empty);
    const none = await sluice(['validate', '-f', empty]);
    expect(none.code).toBe(1);
    expect(none.stderr).toContain('a directory without *.yaml or *.yml files');
  });

  it('skips kinds it does not own with a note on stderr, exit 0', async () => {
    const file = join(dir, 'mixed.yaml');
    await writeFile(file, `${deployment}---\n${route('a', '/a')}`);
    const r = await sluice(['validate', '-f', file]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^ok: 1 routes, /);
    expect(r.stderr).toBe(
      `sluice: note: ${file}: line 1 (document 0): apps/v1 Deployment web is not a kind sluice reads; ignored\n`,
    );
    // A kind of ours that is misspelt is still a problem.
    const typo = await sluice(
      ['validate', '-f', '-'],
      route('a', '/a').replace('GatewayRoute', 'GatewayRoutes'),
    );
    expect(typo.code).toBe(1);
    expect(typo.stderr).toContain('unknown apiVersion/kind "sluice.dev/v1alpha1 GatewayRoutes"');
  });

  it('prints the compiled snapshot with -o json and -o yaml (the summary then goes to stderr)', async () => {
    const json = await sluice(['validate', '-f', '-', '-o', 'json'], `${deployment}---\n${route('a', '/a')}`);
    expect(json.code).toBe(0);
    const snapshot = JSON.parse(json.stdout);
    expect(snapshot.hash).toMatch(/^[0-9a-f]{64}$/);
    expect(snapshot.table.routes.map((r: { id: string }) => r.id)).toEqual(['route/default/a/r/0']);
    expect(snapshot.table.routes[0].match.path).toEqual({ type: 'Prefix', value: '/a' });
    expect(json.stderr).toContain(`ok: 1 routes, hash ${snapshot.hash}`);
    const yaml = await sluice(['validate', '-f', '-', '--output=yaml'], route('a', '/a'));
    expect(yaml.code).toBe(0);
    expect(parse(yaml.stdout)).toEqual(snapshot);
    const other = await sluice(['validate', '-f', '-', '-o', 'xml'], route('a', '/a'));
    expect(other.code).toBe(2);
    expect(other.stderr).toContain('-o must be json or yaml');
  });
});

describe('sluice validate and sluice run on empty, deep and over-size files', () => {
  const EMPTY = 'holds no routes: the file is empty (or only comments and ---); an empty file is refused';

  it('an empty file (or only comments and ---) holds no routes: exit 1 saying so, from validate and run', async () => {
    for (const [name, text] of [
      ['empty.yaml', ''],
      ['comments.yaml', '# the routes will go here\n---\n'],
    ]) {
      const file = join(dir, name);
      await writeFile(file, text);
      const checked = await sluice(['validate', '-f', file]);
      expect(checked).toEqual({
        code: 1,
        stdout: '',
        stderr: `sluice: 1 problem(s):\n  ${file}: ${EMPTY}\n`,
      });
      const run = await sluice(['run', '-f', file, '--port', '0', '--admin-port', '0']);
      expect(run.code).toBe(1);
      expect(run.stderr).toContain(`${file}: ${EMPTY}`);
    }
    const piped = await sluice(['validate', '-f', '-'], '');
    expect(piped.code).toBe(1);
    expect(piped.stderr).toContain(`<stdin>: ${EMPTY}`);
  });

  it('GatewayPlugins alone: validate notes that run refuses them (exit 0), run exits 1', async () => {
    const file = join(dir, 'plugins-only.yaml');
    await writeFile(
      file,
      'apiVersion: sluice.dev/v1alpha1\nkind: GatewayPlugin\nmetadata: { name: p }\nspec:\n  plugin: request-transformer\n  requestTransformer: { add: { headers: ["X-A:1"] } }\n',
    );
    const checked = await sluice(['validate', '-f', file]);
    expect(checked.code).toBe(0);
    expect(checked.stderr).toBe(
      'sluice: note: holds no routes (no GatewayRoute): sluice run refuses it, as it would answer 404 to everything\n',
    );
    const run = await sluice(['run', '-f', file, '--port', '0', '--admin-port', '0']);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(`${file}: holds no routes (no GatewayRoute)`);
  });

  it('10,000 levels of YAML or JSON nesting: exit 1 naming the file and line, no stack overflow', async () => {
    const n = 10_000;
    const cases: [string, string, number][] = [
      ['deep.json', `{"apiVersion": "v1",\n "a":\n${'['.repeat(n)}${']'.repeat(n)}}\n`, 3],
      ['deep.yaml', `${route('a', '/a')}---\nspec:\n  x: ${'{a: '.repeat(n)}1${'}'.repeat(n)}\n`, 11], // the route's 8 lines, ---, spec:, then x
    ];
    for (const [name, text, line] of cases) {
      const file = join(dir, name);
      await writeFile(file, text);
      const r = await sluice(['validate', '-f', file]);
      expect(r.code).toBe(1);
      expect(r.stderr).toBe(
        `sluice: 1 problem(s):\n  ${file}: line ${line}: nests deeper than 64 levels of mappings and sequences; the file is not read\n`,
      );
      expect(r.stderr).not.toContain('call stack');
    }
  });

  it('a file over 32 MiB is not read: exit 1 naming the file and its size', async () => {
    const file = join(dir, 'huge.yaml');
    await writeFile(file, `${route('a', '/a')}#${'x'.repeat(33 * 1024 * 1024)}\n`);
    const r = await sluice(['validate', '-f', file]);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(
      `sluice: 1 problem(s):\n  ${file}: is 33.0 MiB, over the 32.0 MiB a config file may hold; not read\n`,
    );
  });
});

describe('sluice migrate', () => {
  const oldPlugin = (name: string) =>
    `apiVersion: sluice.dev/v1alpha1\nkind: GatewayPlugin\nmetadata: { name: ${name}, namespace: default }\nspec:\n  plugin: rate-limiting\n  config: # per minute\n    minute: 100\n`;

  it('prints the file with spec.config moved to the typed field, naming what it moved', async () => {
    const r = await sluice(['migrate', '-f', '-'], `${deployment}---\n${oldPlugin('limit')}`);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(`${deployment}---\n${oldPlugin('limit').replace('config:', 'rateLimiting:')}`);
    expect(r.stderr).toBe('sluice migrate: <stdin>: 1 GatewayPlugin(s): default/limit\n');
    // The result is what sluice validate (standalone mode) reads.
    const v = await sluice(['validate', '-f', '-'], `${r.stdout}---\n${route('a', '/a')}`);
    expect(v.code, v.stderr).toBe(0);
  });

  it('-w rewrites the files of a directory in place; what it cannot rewrite exits 1 naming file and line', async () => {
    const conf = join(dir, 'migrate');
    await mkdir(conf);
    await writeFile(join(conf, 'a.yaml'), oldPlugin('a'));
    await writeFile(join(conf, 'b.yml'), route('b', '/b'));
    const w = await sluice(['migrate', '-w', '-f', conf]);
    expect(w.code, w.stderr).toBe(0);
    expect(w.stdout).toBe('');
    expect(await readFile(join(conf, 'a.yaml'), 'utf8')).toBe(
      oldPlugin('a').replace('config:', 'rateLimiting:'),
    );
    expect(await readFile(join(conf, 'b.yml'), 'utf8')).toBe(route('b', '/b'));

    const unknown = oldPlugin('c').replace('rate-limiting', 'rate-limit');
    await writeFile(join(conf, 'c.yaml'), unknown);
    const bad = await sluice(['migrate', '-w', '-f', join(conf, 'c.yaml')]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain(
      `${join(conf, 'c.yaml')}:6: GatewayPlugin default/c: spec.plugin "rate-limit"`,
    );
    expect(await readFile(join(conf, 'c.yaml'), 'utf8')).toBe(unknown);

    const stdin = await sluice(['migrate', '-w', '-f', '-'], oldPlugin('d'));
    expect(stdin.code).toBe(2);
    expect(stdin.stderr).toContain('sluice migrate: -w rewrites files; it cannot rewrite -');
  });
});
