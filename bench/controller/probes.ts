/** What bench/controller.ts reads off the processes: /proc figures, admin request counts, V8 heap peaks; and small helpers. */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { http } from '../lib/http.ts';
import { HZ } from '../lib/machine.ts';

import { HOSTS } from './objects.ts';

// Processes: /proc figures.

export function procStatusKiB(pid: number, field: 'VmHWM' | 'VmRSS'): number {
  const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) : Number.NaN;
}
export const mib = (kib: number) => kib / 1024;
export function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / HZ;
}

export const quantile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))];

export async function pool<T>(items: T[], n: number, work: (item: T) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: n }, async () => {
      while (next < items.length) await work(items[next++]);
    }),
  );
}

export function kubectl(kubeconfig: string, argv: string[]): void {
  const r = spawnSync('kubectl', argv, { env: { ...process.env, KUBECONFIG: kubeconfig }, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`kubectl ${argv.join(' ')}: ${r.stderr}`);
}

/** Requests each pod answered on its admin port, by route, its own /metrics reads left out. */
export async function adminRequests(adminPort: number): Promise<number[]> {
  return Promise.all(
    HOSTS.map(async (h) => {
      const text = (await http('GET', `http://${h}:${adminPort}/metrics`, null)).body;
      let sum = 0;
      for (const m of text.matchAll(/^sluice_admin_requests_total\{([^}]*)\} (\d+)/gm))
        if (!m[1].includes('route="/metrics"')) sum += Number(m[2]);
      return sum;
    }),
  );
}

/**
 * The largest V8 heap (total and used) and external memory each process reported on its
 * /metrics (prom-client's nodejs_* gauges), polled every `ms`: where a peak RSS came from.
 */
export class HeapSampler {
  readonly peaks: { heapTotal: number; heapUsed: number; external: number; rssAnon: number }[];
  readonly #timer: NodeJS.Timeout;
  /** pids: RssAnon (resident, not file-backed: what the kernel cannot drop under a memory limit) is sampled too. */
  constructor(urls: string[], pids: number[], ms = 500) {
    this.peaks = urls.map(() => ({ heapTotal: 0, heapUsed: 0, external: 0, rssAnon: 0 }));
    const gauge = (text: string, name: string) =>
      Number(new RegExp(`^${name} (\\S+)`, 'm').exec(text)?.[1] ?? 0) / 1024 / 1024;
    this.#timer = setInterval(() => {
      for (const [i, pid] of pids.entries())
        try {
          const kib = Number(/^RssAnon:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]);
          this.peaks[i].rssAnon = Math.max(this.peaks[i].rssAnon, kib / 1024);
        } catch {}
      for (const [i, url] of urls.entries())
        http('GET', url, null, { timeoutMs: 5_000 }).then(
          ({ body }) => {
            const p = this.peaks[i];
            p.heapTotal = Math.max(p.heapTotal, gauge(body, 'nodejs_heap_size_total_bytes'));
            p.heapUsed = Math.max(p.heapUsed, gauge(body, 'nodejs_heap_size_used_bytes'));
            p.external = Math.max(p.external, gauge(body, 'nodejs_external_memory_bytes'));
          },
          () => {},
        );
    }, ms);
  }
  stop(): void {
    clearInterval(this.#timer);
  }
}
