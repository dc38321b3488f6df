/**
 * Closed-loop HTTP load for the reliability tests: `concurrency` workers on one undici Pool, each
 * sending its next request as soon as the previous one is answered (body read to the end), or
 * `pauseMs` later (ordinary clients beside an attack, rather than a flat-out load). Every
 * outcome is counted by status (0: a transport error, counted by its code too); with `keep`, each
 * is also kept (time, latency, status, kind) for percentiles and timelines. A soak of millions
 * of requests leaves `keep` off: the counters are enough and the test's own memory stays flat.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Pool } from 'undici';

export interface Shot {
  path: string;
  method?: string;
  headers?: Record<string, string>;
  body?: string;
  /** A label the outcome carries (the route, the scenario's class of request). */
  kind?: string;
}

export interface Outcome {
  /** ms since the load started, when the request was sent. */
  at: number;
  ms: number;
  status: number;
  kind: string;
}

export interface LoadOptions {
  url: string;
  concurrency: number;
  /** The i-th request (i counts every request sent, over all workers). */
  next: (i: number) => Shot;
  /** Keep every outcome (default false: counters only). */
  keep?: boolean;
  /** Bound on one request, headers and body (default 30 s): a hang is a failure, not a stuck test. */
  timeoutMs?: number;
  /** A worker's wait between an answer and its next request (default 0). */
  pauseMs?: number;
}

export interface Load {
  /** Requests answered so far, by status (0: transport error). */
  byStatus: Map<number, number>;
  /** Transport errors by code (UND_ERR_SOCKET, ECONNREFUSED …). */
  errors: Map<string, number>;
  outcomes: Outcome[];
  done(): number;
  /** Stops sending, waits for the requests in flight, closes the pool. */
  stop(): Promise<void>;
}

export function startLoad(opts: LoadOptions): Load {
  const pool = new Pool(opts.url, { connections: opts.concurrency, pipelining: 1 });
  const byStatus = new Map<number, number>();
  const errors = new Map<string, number>();
  const outcomes: Outcome[] = [];
  const t0 = performance.now();
  const timeout = opts.timeoutMs ?? 30_000;
  let sent = 0;
  let answered = 0;
  let stopping = false;
  const count = <K>(m: Map<K, number>, k: K) => m.set(k, (m.get(k) ?? 0) + 1);
  const worker = async () => {
    while (!stopping) {
      const shot = opts.next(sent++);
      const start = performance.now();
      let status = 0;
      try {
        const r = await pool.request({
          path: shot.path,
          method: (shot.method ?? 'GET') as 'GET',
          headers: shot.headers,
          body: shot.body,
          headersTimeout: timeout,
          bodyTimeout: timeout,
        });
        await r.body.dump({ limit: Number.POSITIVE_INFINITY });
        status = r.statusCode;
      } catch (e) {
        count(errors, (e as { code?: string }).code ?? (e as Error).message);
      }
      answered++;
      count(byStatus, status);
      if (opts.keep)
        outcomes.push({ at: start - t0, ms: performance.now() - start, status, kind: shot.kind ?? '' });
      if (opts.pauseMs) await sleep(opts.pauseMs);
    }
  };
  const workers = Array.from({ length: opts.concurrency }, worker);
  return {
    byStatus,
    errors,
    outcomes,
    done: () => answered,
    async stop() {
      stopping = true;
      await Promise.all(workers);
      await pool.close();
    },
  };
}

/** The p-th percentile (0–100, nearest rank) of `xs`; NaN when empty. */
export function percentile(xs: number[], p: number): number {
  if (xs.length === 0) return Number.NaN;
  const v = [...xs].sort((a, b) => a - b);
  return v[Math.min(v.length - 1, Math.max(0, Math.ceil((p / 100) * v.length) - 1))];
}

/** "200×1234 503×5 err×2": a count by status, for one-line figures. */
export function statusLine(byStatus: Map<number, number>): string {
  return [...byStatus]
    .sort(([a], [b]) => a - b)
    .map(([s, n]) => `${s === 0 ? 'err' : s}×${n}`)
    .join(' ');
}

/** Requests that did not get `ok` (default: any status outside 2xx). */
export function failures(byStatus: Map<number, number>, ok = (s: number) => s >= 200 && s < 300): number {
  let n = 0;
  for (const [s, c] of byStatus) if (!ok(s)) n += c;
  return n;
}
