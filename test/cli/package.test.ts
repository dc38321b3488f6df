/**
 * The npm package as a user gets it: `npm pack` (prepack builds dist/ with tsconfig.build.json),
 * then `npm install -g --prefix <tmp>` of the tarball (a real install: dependencies from the
 * registry or npm's cache, about 6 s here, cold cache included), then the installed `sluice`
 * binary validates the example it ships. Node does not strip types under node_modules, so this
 * fails if the package points at TypeScript or a compiled import still ends in `.ts`.
 */
import { execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../helpers/servers.ts';

const exec = promisify(execFile);
const ROOT = resolve(import.meta.dirname, '../..');
// The Node running the tests (24) first on PATH, for npm and for the binary's `#!/usr/bin/env node`.
const NODE_DIR = dirname(process.execPath);
const env = { ...process.env, PATH: `${NODE_DIR}${delimiter}${process.env.PATH ?? ''}` };
const NPM = existsSync(join(NODE_DIR, 'npm')) ? join(NODE_DIR, 'npm') : 'npm';
const TINI = ['/usr/bin/tini', '/bin/tini'].some((f) => existsSync(f));
const npm = (args: string[], cwd = ROOT) =>
  exec(NPM, [...args, '--no-audit', '--no-fund', '--loglevel=error'], { cwd, env, maxBuffer: 1 << 24 });

let dir: string;
let tarball: string;
let files: string[];
let prefix: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sluice-pack-'));
  const packed = JSON.parse((await npm(['pack', '--json', '--pack-destination', dir])).stdout);
  tarball = join(dir, packed[0].filename);
  files = packed[0].files.map((f: { path: string }) => f.path);
  prefix = join(dir, 'prefix');
  await npm(['install', '--global', '--prefix', prefix, tarball], dir);
}, 180_000);
afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('npm package', () => {
  it('ships compiled JavaScript, the CRDs, the example and the licence; no sources or tests', () => {
    expect(files).toEqual(
      expect.arrayContaining([
        'package.json',
        'LICENSE',
        'README.md',
        'dist/bin/sluice.js',
        'dist/dataplane/main.js',
        'dist/controller/main.js',
        'crds/sluice.dev_gatewayroutes.yaml',
        'examples/gateway.yaml',
      ]),
    );
    expect(files.filter((f) => f.endsWith('.ts') || f.startsWith('test/') || f.startsWith('bin/'))).toEqual(
      [],
    );
  });

  it('installs a sluice binary that runs: validate on the shipped example', async () => {
    const bin = join(prefix, 'bin', 'sluice');
    const example = join(prefix, 'lib', 'node_modules', 'sluice', 'examples', 'gateway.yaml');
    const { stdout } = await exec(bin, ['validate', '-f', example], { env, cwd: dir });

    expect(stdout).toMatch(/^ok: 8 routes, hash [0-9a-f]{64}$/m);
  });

  it("prints the package's version (package.json is three folders above dist/bin/lib/)", async () => {
    const bin = join(prefix, 'bin', 'sluice');
    const { version } = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8'));
    const { stdout } = await exec(bin, ['--version'], { env, cwd: dir });
    expect(stdout.trim()).toContain(version);
  });

  it("SLUICE_NODE_FLAG reaches Node through the #! line (the chart sets the controller's young generation so)", async () => {
    const bin = join(prefix, 'bin', 'sluice');
    const run = exec(bin, ['--version'], {
      env: { ...env, SLUICE_NODE_FLAG: '--no-such-v8-flag-here' },
      cwd: dir,
    });
    await expect(run).rejects.toMatchObject({ stderr: expect.stringContaining('--no-such-v8-flag-here') });
  });

  // The image's entrypoint is `tini -- sluice` (Dockerfile): the same here, but for the image
  // itself, which needs a Docker engine. tini comes from Debian (.ci/run installs it).
  it.skipIf(!TINI && !process.env.CI)(
    "runs as the image does: tini -- sluice starts Node with the #! line's V8 flags; SIGTERM through tini drains and exits 0",
    async () => {
      const bin = join(prefix, 'bin', 'sluice');
      const example = join(prefix, 'lib', 'node_modules', 'sluice', 'examples', 'gateway.yaml');
      const [port, admin] = [await freePort(), await freePort()];
      const args = [
        '-s',
        '--',
        bin,
        'run',
        '-f',
        example,
        '--port',
        String(port),
        '--admin-port',
        String(admin),
      ];
      const tini = spawn('tini', [...args, '--state-dir', join(dir, 'state')], { env, cwd: dir });
      let out = '';
      tini.stdout.on('data', (d: Buffer) => {
        out += d;
      });
      try {
        for (let i = 0; i < 100 && !(await fetch(`http://127.0.0.1:${port}/`).catch(() => null)); i++)
          await new Promise((r) => setTimeout(r, 100));
        expect((await fetch(`http://127.0.0.1:${port}/`)).status).toBe(404);
        const [child] = (await readFile(`/proc/${tini.pid}/task/${tini.pid}/children`, 'utf8'))
          .trim()
          .split(' ');
        const cmdline = (await readFile(`/proc/${child}/cmdline`, 'utf8')).split('\0');
        expect(cmdline).toContain('--max-semi-space-size=16');
        // SLUICE_NODE_FLAG (unset here) adds no argument.
        expect(cmdline.filter((a) => a.startsWith('--'))[0]).toBe('--max-semi-space-size=16');
        expect(cmdline.slice(0, -1).some((a) => a === '' || a.includes('SLUICE_NODE_FLAG'))).toBe(false); // ends with a NUL
        tini.kill('SIGTERM');
        const [code] = await once(tini, 'exit');
        expect(code).toBe(0);
        expect(out).toContain('draining');
      } finally {
        tini.kill('SIGKILL');
      }
    },
    30_000,
  );

  it('refuses a bad file from the installed binary, naming it', async () => {
    const bin = join(prefix, 'bin', 'sluice');
    const err = await exec(bin, ['validate', '-f', join(dir, 'missing.yaml')], { env, cwd: dir }).then(
      () => null,
      (e: { code: number; stderr: string }) => e,
    );
    expect(err?.code).not.toBe(0);
    expect(err?.stderr).toContain('missing.yaml');
  });
});
