/**
 * bench/lib/callgrind.ts reads real callgrind dumps (a Node process under valgrind, dumped
 * while it runs, as bench/instructions.ts does): the parts add up to the dump's total, nothing
 * counted twice, and a process that hashes shows it in the crypto part. bench/functions.ts names
 * the process's JavaScript by its perf map (--perf-basic-prof) and lists each function's own.
 */
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { functionName, perRequest } from '../../bench/functions.ts';
import { PARTS, parts, selfCosts } from '../../bench/lib/callgrind.ts';

const available = spawnSync('sh', ['-c', 'command -v valgrind && command -v callgrind_control']).status === 0;
if (!available)
  process.stderr.write(
    `callgrind.test: valgrind is not installed: ${process.env.CI ? 'CI is set, so the tests run and fail' : 'skipped'}\n`,
  );

describe.skipIf(!available && !process.env.CI)('callgrind dumps', () => {
  const dir = fs.mkdtempSync(join(tmpdir(), 'sluice-callgrind-'));
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('splits a dump taken mid-run into parts that add up to its total, crypto included; names its JavaScript', async () => {
    // Hashes and sums char codes until told to stop, printing "ready" once its loop has begun.
    const script = `
      const { createHash } = require('node:crypto');
      let stop = false;
      process.on('SIGTERM', () => { stop = true; });
      console.log('ready');
      function sumOfCodes(s) { let n = 0; for (let i = 0; i < s.length; i++) n += s.charCodeAt(i); return n; }
      (function loop() {
        for (let i = 0; i < 500; i++) createHash('sha256').update('x'.repeat(4096)).digest('hex');
        for (let i = 0; i < 100; i++) sumOfCodes('y'.repeat(2048));
        if (!stop) setImmediate(loop);
      })();`;
    const child = spawn(
      'valgrind',
      [
        '--tool=callgrind',
        `--callgrind-out-file=${join(dir, 'cg.out')}`,
        process.execPath,
        '--perf-basic-prof',
        // sumOfCodes keeps a frame of its own: inlined into loop by an optimizing compiler, its
        // instructions were loop's and the perf map had no name for them (seen once in CI).
        '--no-turbo-inlining',
        '--no-maglev-inlining',
        '-e',
        script,
      ],
      { stdio: ['ignore', 'pipe', 'ignore'] },
    );
    await new Promise<void>((resolve) =>
      child.stdout.on('data', (d: Buffer) => d.includes('ready') && resolve()),
    );
    // Twice: the first dump holds the start-up, the second only the loop (dumps zero the counts).
    for (const _ of [1, 2]) {
      await new Promise((r) => setTimeout(r, 3_000));
      expect(spawnSync('callgrind_control', ['-d', String(child.pid)]).status).toBe(0);
    }
    child.kill('SIGTERM');
    await once(child, 'exit');

    const loop = parts(join(dir, 'cg.out.2'));
    expect(loop.total).toBeGreaterThan(10_000_000);
    const sum = ['other', ...PARTS.map(([name]) => name)].reduce((n, name) => n + loop[name], 0);
    // Exactly the total: callgrind_annotate's per-function figures add up to several times it on
    // such a dump (the functions on the stack are given what they called).
    expect(sum).toBe(loop.total);
    // SHA-256 of 4 KiB strings is most of what the loop does.
    expect(loop.crypto / loop.total).toBeGreaterThan(0.3);
    const startup = parts(join(dir, 'cg.out.1'));
    expect(startup.compiler).toBeGreaterThan(0);

    // Function by function: the same total, and the JavaScript named by the perf map.
    const { total, functions } = selfCosts(join(dir, 'cg.out.2'));
    expect([...functions.values()].reduce((n, v) => n + v, 0)).toBe(total);
    const map = `/tmp/perf-${child.pid}.map`;
    fs.renameSync(map, join(dir, 'perf.map'));
    const named = perRequest(join(dir, 'cg.out.2'), 1);
    const codes = [...named].find(([f]) => f.startsWith('sumOfCodes '));
    expect(codes, [...named.keys()].filter((f) => !f.startsWith('JIT code')).join('\n')).toBeDefined();
    expect(codes![1]).toBeGreaterThan(100_000);
  }, 120_000);

  it("names a function as the perf map does, without V8's tier or where the files are", () => {
    const map = new Map([
      [0x1000, "JS:*'processHeader /srv/a/node_modules/undici/lib/core/request.js:472:24"],
      [0x2000, `JS:+'match file://${join(import.meta.dirname, '../..')}/dataplane/runtime/router.ts:107:8`],
      [0x3000, 'JS:^ node:internal/streams/readable:141:8'],
    ]);
    const name = (a: number) => map.get(a) ?? null;
    expect(functionName('0x0000000000001000 [???]', name)).toBe('processHeader undici/lib/core/request.js');
    expect(functionName('0x0000000000002000 [???]', name)).toBe('match dataplane/runtime/router.ts');
    expect(functionName('0x0000000000003000 [???]', name)).toBe('node:internal/streams/readable:141:8');
    expect(functionName('0x0000000000004000 [???]', name)).toBe('JIT code at 0x0000000000004000');
    expect(
      functionName(
        'v8::internal::(anonymous namespace)::Visit(v8::internal::Isolate*) const [/usr/bin/node]',
        name,
      ),
    ).toBe('v8::internal::(anonymous namespace)::Visit');
  });
});
