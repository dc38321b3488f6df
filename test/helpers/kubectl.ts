/** kubectl against the cluster KUBECONFIG names, retried while the API server's answer is transient. */
import { execFile } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';

export interface Result {
  code: number;
  stdout: string;
  stderr: string;
}

export function kubectlOnce(args: string[], input = ''): Promise<Result> {
  return new Promise((resolve) => {
    const child = execFile('kubectl', args, { timeout: 30_000 }, (err, stdout, stderr) => {
      // err.code is a string when kubectl could not run at all (ENOENT): keep its message.
      const killed = err?.killed ? `killed after 30 s (${err.signal})\n` : '';
      resolve({
        code: err ? Number(err.code) || 1 : 0,
        stdout,
        stderr: killed + (stderr || (err?.message ?? '')),
      });
    });
    child.stdin?.end(input);
  });
}

// Answers that go away by themselves just after a CRD is created: storage initializing (429),
// discovery or OpenAPI not caught up yet.
// And a watch (kubectl wait) whose resourceVersion was compacted away meanwhile.
const TRANSIENT =
  /TooManyRequests|storage is \(re\)initializing|doesn't have a resource type|could not find the requested resource|no matches for kind|too old resource version/;

/** kubectl, retried while the answer is transient. */
export async function kubectl(args: string[], input?: string): Promise<Result> {
  const deadline = Date.now() + 30_000;
  for (let delay = 100; ; delay = Math.min(delay * 2, 2_000)) {
    const r = await kubectlOnce(args, input);
    if (r.code === 0 || !TRANSIENT.test(r.stderr) || Date.now() > deadline) return r;
    await sleep(delay);
  }
}

export async function ok(args: string[], input?: string): Promise<string> {
  const r = await kubectl(args, input);
  if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')} failed (${r.code}):\n${r.stderr}`);
  return r.stdout;
}

/**
 * A test's cleanup: every object of `kinds` (comma-separated) in `namespace`, not waited for.
 * None of the kinds the tests create carries a finalizer, so each object is gone when its DELETE
 * returns. kubectl's wait for them took ~0.2 s an object past a few dozen on kapi (40 routes 6 s,
 * 300 routes 60 s, which kubectlOnce's 30 s limit cut short). Failures are the caller's to ignore.
 */
export const deleteAll = (kinds: string, namespace: string): Promise<string> =>
  ok(['delete', kinds, '--all', '-n', namespace, '--ignore-not-found', '--wait=false']);
