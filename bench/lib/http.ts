/** Small HTTP and port helpers for the benches (node:http, no pooling: each call its own connection). */
import { type IncomingHttpHeaders, type OutgoingHttpHeaders, request } from 'node:http';
import { createServer } from 'node:net';
import type { Proc } from './processes.ts';
import { tail } from './processes.ts';

export interface Reply {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

export function http(
  method: string,
  url: string,
  body: string | null,
  o: { headers?: OutgoingHttpHeaders; timeoutMs?: number } = {},
): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const options = { method, agent: false, timeout: o.timeoutMs ?? 2_000, headers: o.headers ?? {} };
    const req = request(url, options, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          body: Buffer.concat(chunks).toString(),
        }),
      );
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end(body ?? undefined);
  });
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Waits until GET `url` answers 200; throws (with the end of the process's log) if it exits or times out. */
export async function waitReady(
  p: Proc,
  url: string,
  timeoutMs = 20_000,
  headers: Record<string, string> = {},
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  while (Date.now() < deadline) {
    if (p.exited)
      throw new Error(
        `${p.name} exited (code ${p.child.exitCode ?? p.child.signalCode}) before answering; log ${p.log}\n${tail(p.log)}`,
      );
    try {
      const r = await http('GET', url, null, { timeoutMs: 1_000, headers });
      if (r.status === 200) return;
      last = `status ${r.status}: ${r.body.slice(0, 200)}`;
    } catch (err) {
      last = (err as Error).message;
    }
    await sleep(100);
  }
  throw new Error(
    `${p.name} did not answer GET ${url} within ${timeoutMs / 1000} s (${last}); log ${p.log}:\n${tail(p.log)}`,
  );
}

export function portFree(port: number): Promise<boolean> {
  return new Promise((r) => {
    const s = createServer();
    s.once('error', () => r(false));
    s.listen(port, '127.0.0.1', () => s.close(() => r(true)));
  });
}
