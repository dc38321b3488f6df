/**
 * bench/lib/callgrind.ts reads real callgrind dumps (a Node process under valgrind, dumped
 * while it runs, as bench/instructions.ts does): the parts add up to the dump's total, nothing
 * counted twice, and a process that hashes shows it in the crypto part.
 */
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { PARTS, parts } from '../../bench/lib/callgrind.ts';

const available = spawnSync('sh', ['-c', 'command -v valgrind && command -v callgrind_control']).status === 0;
if (!available)
  process.stderr.write(
    `callgrind.test: valgrind is not installed: ${process.env.CI ? 'CI is set, so the tests run and fail' : 'skipped'}\n`,
  );

describe.skipIf(!available && !process.env.CI)('callgrind dumps', () => {
  const dir = fs.mkdtempSync(join(tmpdir(), 'sluice-callgrind-'));
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('splits a dump taken mid-run into parts that add up to its total, crypto included', async () => {
    // Hashes until told to stop, printing "ready" once its loop has begun.
    const script = `
      const { createHash } = require('node:crypto');
      let stop = false;
      process.on('SIGTERM', () => { stop = true; });
      console.log('ready');
      (function loop() {
        for (let i = 0; i < 2000; i++) createHash('sha256').update('x'.repeat(4096)).digest('hex');
        if (!stop) setImmediate(loop);
      })();`;
    const child = spawn(
      'valgrind',
      ['--tool=callgrind', `--callgrind-out-file=${join(dir, 'cg.out')}`, process.execPath, '-e', script],
      { stdio: ['ignore', 'pipe', 'ignore'] },
    );
    await new Promise<void>((resolve) =>
      child.stdout.on('data', (d: Buffer) => d.includes('ready') && resolve()),
    );
    // Twice: the first dump holds the start-up, the second only the loop (dumps zero the counts).
    for (const _ of [1, 2]) {
      await new Promise((r) => setTimeout(r, 1_500));
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
  }, 120_000);
});
