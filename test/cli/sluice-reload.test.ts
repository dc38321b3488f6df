/**
 * `sluice run` re-reading its configuration, through the real binary: on SIGHUP (a directory's
 * new file is picked up), with --watch on every save, and an invalid edit is logged and
 * refused while the old configuration keeps serving; so are an empty file, a non-YAML one and
 * one nested too deep, each refusal logged and counted in sluice_config_loads_total. Also: a
 * foreign kind in the file is skipped with a note, not a failure.
 */
import { mkdir, mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LaunchedProcess, launch, readMetric } from '../helpers/processes.ts';
import { freePort, startUpstream, type Upstream } from '../helpers/servers.ts';

let dir: string;
let up: Upstream;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sluice-reload-'));
  up = await startUpstream();
});
afterAll(async () => {
  await up?.close();
  await rm(dir, { recursive: true, force: true });
});

const route = (name: string, path: string, url = up.url) =>
  `apiVersion: sluice.dev/v1alpha1\nkind: GatewayRoute\nmetadata: { name: ${name}, namespace: default }\nspec:\n  service: { name: ${name}, url: "${url}" }\n  routes:\n    - name: r\n      paths: ["${path}"]\n`;

/** `sluice run` on `paths` (files or directories), with its state dir outside them. */
async function run(
  paths: string[],
  extra: string[] = [],
): Promise<LaunchedProcess & { proxy: string; admin: string }> {
  const [port, adminPort] = [await freePort(), await freePort()];
  const state = await mkdtemp(join(tmpdir(), 'sluice-reload-state-'));
  const proc = await launch(
    [
      'run',
      ...paths.flatMap((p) => ['-f', p]),
      '--host',
      '127.0.0.1',
      '--port',
      String(port),
      '--admin-port',
      String(adminPort),
      '--state-dir',
      state,
      '--admin-token',
      't',
      '--no-access-log',
      ...extra,
    ],
    `http://127.0.0.1:${adminPort}/readyz`,
    state,
    { what: 'sluice run' },
  );
  return Object.assign(proc, { proxy: `http://127.0.0.1:${port}`, admin: `http://127.0.0.1:${adminPort}` });
}

const status = (url: string) =>
  fetch(url).then(
    async (r) => {
      await r.arrayBuffer();
      return r.status;
    },
    () => 0,
  );

describe('sluice run reloads', () => {
  it('SIGHUP re-reads a directory: a new file adds its routes, a removed one takes them away', async () => {
    const conf = join(dir, 'hup');
    await mkdir(conf);
    await writeFile(join(conf, 'a.yaml'), route('a', '/a'));
    const gw = await run([conf]);
    try {
      expect(await status(`${gw.proxy}/a`)).toBe(200);
      expect(await status(`${gw.proxy}/b`)).toBe(404);
      await writeFile(join(conf, 'b.yml'), route('b', '/b'));
      gw.process.kill('SIGHUP');
      await expect.poll(() => status(`${gw.proxy}/b`), { timeout: 5_000 }).toBe(200);
      expect(await status(`${gw.proxy}/a`)).toBe(200);
      await rm(join(conf, 'a.yaml'));
      gw.process.kill('SIGHUP');
      await expect.poll(() => status(`${gw.proxy}/a`), { timeout: 5_000 }).toBe(404);
      expect(gw.stdout()).toContain('"trigger":"SIGHUP"');
      expect(gw.stdout()).toContain('configuration reloaded');
    } finally {
      await gw.stop();
    }
  });

  it('--watch reloads on save, without a signal', async () => {
    const file = join(dir, 'watched.yaml');
    await writeFile(file, route('w', '/one'));
    const gw = await run([file], ['--watch']);
    try {
      expect(await status(`${gw.proxy}/one`)).toBe(200);
      await writeFile(file, route('w', '/two'));
      await expect.poll(() => status(`${gw.proxy}/two`), { timeout: 5_000 }).toBe(200);
      expect(await status(`${gw.proxy}/one`)).toBe(404);
      expect(gw.stdout()).toContain('"trigger":"change"');
    } finally {
      await gw.stop();
    }
  });

  it('--watch sees a file replaced by rename (as editors save) and new files in a watched directory', async () => {
    const conf = join(dir, 'watched-dir');
    await mkdir(conf);
    await writeFile(join(conf, 'a.yaml'), route('a', '/a'));
    const gw = await run([conf], ['--watch']);
    try {
      await writeFile(join(conf, 'b.yaml'), route('b', '/b'));
      await expect.poll(() => status(`${gw.proxy}/b`), { timeout: 5_000 }).toBe(200);
      await writeFile(join(conf, '.a.yaml.swp'), route('a', '/a2'));
      await rename(join(conf, '.a.yaml.swp'), join(conf, 'a.yaml'));
      await expect.poll(() => status(`${gw.proxy}/a2`), { timeout: 5_000 }).toBe(200);
    } finally {
      await gw.stop();
    }
  });

  it('an invalid edit is logged and refused; the old configuration keeps serving, the next good one applies', async () => {
    const file = join(dir, 'invalid.yaml');
    await writeFile(file, route('v', '/good'));
    const gw = await run([file], ['--watch']);
    try {
      await writeFile(file, route('v', '/broken', 'not a url'));
      await expect
        .poll(() => gw.stdout().includes('reload refused: the running configuration stays'), {
          timeout: 5_000,
        })
        .toBe(true);
      expect(gw.stdout()).toContain('spec.service.url');
      expect(await status(`${gw.proxy}/good`)).toBe(200);
      expect(await status(`${gw.proxy}/broken`)).toBe(404);
      await writeFile(file, 'apiVersion: sluice.dev/v1alpha1\nkind: GatewayRoute\nmetadata: {name: [\n');
      gw.process.kill('SIGHUP');
      await new Promise((r) => setTimeout(r, 500));
      expect(await status(`${gw.proxy}/good`)).toBe(200);
      expect(gw.process.exitCode).toBeNull();
      await writeFile(file, route('v', '/fixed'));
      await expect.poll(() => status(`${gw.proxy}/fixed`), { timeout: 5_000 }).toBe(200);
    } finally {
      await gw.stop();
    }
  });

  it.each([
    ['one process', []],
    ['--workers 2', ['--workers', '2']],
  ])(
    'refuses an empty, a non-YAML, an invalid or a too deep file (%s): the old routes serve, each refusal is logged naming file and field or line, and counted',
    async (_, extra) => {
      const file = join(dir, `refused-${extra.length}.yaml`);
      await writeFile(file, route('v', '/good'));
      const gw = await run([file], extra);
      const rejected = () => readMetric(gw.admin, 'sluice_config_loads_total', { result: 'rejected' });
      const refusals = () =>
        gw
          .stdout()
          .split('\n')
          .filter((l) => l.includes('reload refused'));
      const cases: [string, string, string][] = [
        ['', 'an empty file', 'holds no routes: the file is empty'],
        ['# all routes moved\n---\n', 'only a comment', 'holds no routes: the file is empty'],
        ['routes: [/a, /b\nservice: x\n', 'not YAML', '"message":"line 2: '],
        [route('v', '/broken', 'not a url'), 'schema-invalid', '"field":"spec.service.url"'],
        [
          `${route('v', '/deep')}  extra: ${'['.repeat(10_000)}\n`,
          'too deep',
          'line 9: nests deeper than 64 levels',
        ],
      ];
      try {
        expect(await status(`${gw.proxy}/good`)).toBe(200);
        const before = await rejected();
        for (const [i, [text, what, named]] of cases.entries()) {
          await writeFile(file, text);
          gw.process.kill('SIGHUP');
          await expect.poll(rejected, { timeout: 10_000, message: what }).toBe(before + i + 1);
          // The line comes through the process's stdout, the count through the admin port: the
          // count may be read before the line has reached this side of the pipe.
          await expect.poll(() => refusals().length, { timeout: 5_000, message: what }).toBe(i + 1);
          const logged = refusals()[i];
          expect(logged, what).toContain(`"where":"${file}`);
          expect(logged, what).toContain(named);
          expect(await status(`${gw.proxy}/good`), what).toBe(200);
        }
        expect(refusals()).toHaveLength(cases.length); // one line per refusal
        expect(await status(`${gw.proxy}/broken`)).toBe(404);
        expect(gw.process.exitCode).toBeNull();
        // The next good file applies.
        await writeFile(file, route('v', '/fixed'));
        gw.process.kill('SIGHUP');
        await expect.poll(() => status(`${gw.proxy}/fixed`), { timeout: 10_000 }).toBe(200);
        expect(await rejected()).toBe(before + cases.length);
      } finally {
        await gw.stop();
      }
    },
  );

  it('starts with a foreign kind in the file, noting it on stderr', async () => {
    const file = join(dir, 'mixed.yaml');
    await writeFile(
      file,
      `apiVersion: v1\nkind: ConfigMap\nmetadata: { name: settings }\ndata: { a: "1" }\n---\n${route('m', '/m')}`,
    );
    const gw = await run([file]);
    try {
      expect(await status(`${gw.proxy}/m`)).toBe(200);
      expect(gw.stderr()).toContain('sluice: note: ');
      expect(gw.stderr()).toContain('v1 ConfigMap settings is not a kind sluice reads; ignored');
    } finally {
      await gw.stop();
    }
  });
});
